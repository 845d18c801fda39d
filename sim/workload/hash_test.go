package workload

import (
	"slices"
	"testing"
)

// build returns the blocks of a stream made of the given (segment, length) pieces.
func build(pieces ...[2]int) []uint64 {
	s := newStream(42, 0)
	for _, p := range pieces {
		s.appendSegment(uint64(p[0]), p[1])
	}
	return s.blocks
}

func commonPrefix(a, b []uint64) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestStreamSharesExactlyTheCommonTokenBlocks(t *testing.T) {
	tests := []struct {
		name       string
		a, b       [][2]int
		wantBlocks [2]int // len(a), len(b)
		wantCommon int
	}{
		// 1000 tokens of segment 1 = 62 full blocks + 8 tokens; the 63rd block mixes segment 1's
		// last 8 tokens with the question's first 8, and the questions differ.
		{"same system prompt, different questions", [][2]int{{1, 1000}, {2, 30}}, [][2]int{{1, 1000}, {3, 30}}, [2]int{64, 64}, 62},
		// Different first segments share nothing, not even a block of the same length.
		{"different system prompts", [][2]int{{1, 1000}, {2, 30}}, [][2]int{{4, 1000}, {2, 30}}, [2]int{64, 64}, 0},
		// A longer continuation of the same token stream keeps every block of the shorter one,
		// including the block that straddles the boundary (20+12 = 32 tokens = 2 blocks).
		{"extension keeps straddling block", [][2]int{{1, 20}, {2, 12}}, [][2]int{{1, 20}, {2, 28}}, [2]int{2, 3}, 2},
		// Same segments at different lengths: block 1 is [16,20) of seg 1 + 12 of seg 2 in a,
		// but [16,24) of seg 1 + 8 of seg 2 in b: different tokens, different hash.
		{"boundary at a different position", [][2]int{{1, 20}, {2, 12}}, [][2]int{{1, 24}, {2, 8}}, [2]int{2, 2}, 1},
		// A block of 16 tokens of one segment hashes the same however it was reached.
		{"partial then whole", [][2]int{{1, 16}}, [][2]int{{1, 16}, {5, 3}}, [2]int{1, 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := build(tt.a...), build(tt.b...)
			if len(a) != tt.wantBlocks[0] || len(b) != tt.wantBlocks[1] {
				t.Fatalf("blocks = %d, %d, want %v", len(a), len(b), tt.wantBlocks)
			}
			if got := commonPrefix(a, b); got != tt.wantCommon {
				t.Errorf("common leading blocks = %d, want %d", got, tt.wantCommon)
			}
		})
	}
}

func TestContentHashOfOneRunMatchesWholeBlockHash(t *testing.T) {
	for _, off := range []int{0, 16, 4096} {
		if contentHash([]run{{7, off, BlockSize}}) != wholeBlockHash(7, off) {
			t.Errorf("offset %d: contentHash and wholeBlockHash differ", off)
		}
	}
}

func TestViewsSurviveLaterAppends(t *testing.T) {
	s := newStream(1, 2) // too small: the backing array will be reallocated
	s.appendSegment(9, 40)
	v := s.view(0, len(s.blocks))
	want := slices.Clone(v)
	s.appendSegment(10, 500)
	if !slices.Equal(v, want) || cap(v) != len(v) {
		t.Fatalf("view changed after append: %v, want %v (cap %d)", v, want, cap(v))
	}
}
