package prefix

import (
	"fmt"
	"sync"
	"testing"
)

func TestMatchCountsLeadingBlocks(t *testing.T) {
	x := New(100)
	x.Record("a", []uint64{1, 2, 3, 4})
	tests := []struct {
		name     string
		endpoint string
		prompt   []uint64
		want     int
		fraction float64
	}{
		{"whole prompt recorded", "a", []uint64{1, 2, 3, 4}, 4, 1},
		{"longer prompt, shared head", "a", []uint64{1, 2, 3, 4, 5, 6, 7, 8}, 4, 0.5}, // 4 of 8
		{"first block differs: no match", "a", []uint64{9, 2, 3}, 0, 0},
		{"a miss ends the prefix", "a", []uint64{1, 2, 7, 4}, 2, 0.5}, // 1, 2 then 7 misses: 2 of 4
		{"unknown endpoint", "b", []uint64{1, 2}, 0, 0},
		{"empty prompt", "a", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := x.Match(tt.endpoint, tt.prompt); got != tt.want {
				t.Errorf("Match = %d, want %d", got, tt.want)
			}
			if got := x.Fraction(tt.endpoint, tt.prompt); got != tt.fraction {
				t.Errorf("Fraction = %v, want %v", got, tt.fraction)
			}
		})
	}
}

func TestLeastRecentlyUsedBlocksAgeOut(t *testing.T) {
	x := New(4)
	x.Record("a", []uint64{1, 2, 3})
	x.Record("a", []uint64{1})    // 1 is now the most recent: order (new→old) 1, 3, 2
	x.Record("a", []uint64{7, 8}) // 8, 7, 1, 3, 2 is one over capacity 4: 2, the oldest, goes
	for _, tt := range []struct {
		hash uint64
		kept bool
	}{{1, true}, {2, false}, {3, true}, {7, true}, {8, true}} {
		if got := x.Match("a", []uint64{tt.hash}) == 1; got != tt.kept {
			t.Errorf("block %d kept = %v, want %v", tt.hash, got, tt.kept)
		}
	}
	if n := x.Len("a"); n != 4 {
		t.Errorf("Len = %d, want 4", n)
	}
}

func TestSetCapacityShrinksAndBounds(t *testing.T) {
	x := New(10)
	x.Record("a", []uint64{1, 2, 3, 4, 5})
	x.SetCapacity("a", 2) // keeps the two most recent: 5, 4
	if n := x.Len("a"); n != 2 || x.Match("a", []uint64{4}) != 1 || x.Match("a", []uint64{1}) != 0 {
		t.Errorf("after SetCapacity(2): Len %d, has 4: %v, has 1: %v", n, x.Match("a", []uint64{4}) == 1, x.Match("a", []uint64{1}) == 1)
	}
	for i := range uint64(1000) { // memory stays flat whatever is recorded
		x.Record("a", []uint64{100 + i})
	}
	if n := x.Len("a"); n != 2 {
		t.Errorf("Len after 1000 records = %d, want 2", n)
	}
	x.Remove("a")
	if n := x.Len("a"); n != 0 {
		t.Errorf("Len after Remove = %d, want 0", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	x := New(64)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep := fmt.Sprint("e", w%3)
			for i := range 500 {
				blocks := []uint64{uint64(i % 50), uint64(i%50 + 1000)}
				x.Record(ep, blocks)
				_ = x.Fraction(ep, blocks)
			}
		}()
	}
	wg.Wait()
	for e := range 3 {
		if n := x.Len(fmt.Sprint("e", e)); n > 64 {
			t.Errorf("endpoint e%d holds %d blocks, capacity 64", e, n)
		}
	}
}

func BenchmarkMatch100Endpoints(b *testing.B) {
	x := New(1 << 16)
	prompt := make([]uint64, 64)
	for i := range prompt {
		prompt[i] = uint64(i)
	}
	for e := range 100 {
		x.Record(fmt.Sprint("e", e), prompt[:e%64])
	}
	b.ResetTimer()
	for b.Loop() {
		for e := range 100 {
			x.Match(fmt.Sprint("e", e), prompt)
		}
	}
}
