package prefix

import (
	"fmt"
	"math/rand/v2"
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
		{"first block differs: no match", "a", []uint64{9, 10, 11}, 0, 0},
		{"a miss ends the prefix", "a", []uint64{1, 2, 7, 8}, 2, 0.5}, // 1, 2 then 7 misses: 2 of 4
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
	x.Record("a", []uint64{1, 2, 3}) // order (new→old): 1, 2, 3 — a prompt's head is its newest
	x.Record("a", []uint64{5})       // 5, 1, 2, 3
	x.Record("a", []uint64{1})       // 1, 5, 2, 3
	x.Record("a", []uint64{7})       // 7, 1, 5, 2, 3 is one over capacity 4: 3, the oldest, goes
	for _, tt := range []struct {
		hash uint64
		kept bool
	}{{1, true}, {2, true}, {3, false}, {5, true}, {7, true}} {
		if got := x.Match("a", []uint64{tt.hash}) == 1; got != tt.kept {
			t.Errorf("block %d kept = %v, want %v", tt.hash, got, tt.kept)
		}
	}
	if n := x.Len("a"); n != 4 {
		t.Errorf("Len = %d, want 4", n)
	}
}

// TestFullRecordKeepsPromptHeads checks that when prompts overflow the record, the older prompt
// loses its tail, not its head: its shared prefix still matches.
func TestFullRecordKeepsPromptHeads(t *testing.T) {
	x := New(6)
	x.Record("a", []uint64{1, 2, 3, 4})
	x.Record("a", []uint64{10, 11, 12, 13}) // two over: 4 and 3 go
	if got := x.Match("a", []uint64{1, 2, 3, 4}); got != 2 {
		t.Errorf("older prompt matches %d blocks, want its first 2", got)
	}
	if got := x.Match("a", []uint64{10, 11, 12, 13}); got != 4 {
		t.Errorf("newer prompt matches %d blocks, want 4", got)
	}
}

// TestMatchIsTheLongestHeldPrefix records many chained prompts — conversations that share system
// prompts and grow turn by turn — into a record far too small for them, and checks after each
// that Match, a binary search, equals a block-by-block scan for every prompt seen.
func TestMatchIsTheLongestHeldPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	chain := func(parent uint64, content uint64) uint64 { return (parent^content)*0x9E3779B97F4A7C15 + 1 }
	x := New(300)
	var prompts [][]uint64
	for i := range 2000 {
		var p []uint64
		if len(prompts) > 0 && rng.IntN(3) > 0 { // a later turn or a sibling: extend a known prefix
			base := prompts[rng.IntN(len(prompts))]
			p = append(p, base[:rng.IntN(len(base)+1)]...)
		}
		for range 1 + rng.IntN(40) {
			parent := uint64(0)
			if len(p) > 0 {
				parent = p[len(p)-1]
			}
			p = append(p, chain(parent, uint64(rng.IntN(4)))) // few contents: many shared chains
		}
		x.Record("a", p)
		prompts = append(prompts, p)
		if i%50 != 0 {
			continue
		}
		for _, q := range prompts {
			scan := 0
			for _, b := range q {
				if x.Match("a", []uint64{b}) != 1 {
					break
				}
				scan++
			}
			if got := x.Match("a", q); got != scan {
				t.Fatalf("after %d prompts: Match = %d, block-by-block scan = %d", i+1, got, scan)
			}
		}
	}
}

func TestSetCapacityShrinksAndBounds(t *testing.T) {
	x := New(10)
	x.Record("a", []uint64{1, 2, 3, 4, 5})
	x.SetCapacity("a", 2) // keeps the two most recent: the prompt's head, 1 and 2
	if n, m := x.Len("a"), x.Match("a", []uint64{1, 2, 3, 4, 5}); n != 2 || m != 2 {
		t.Errorf("after SetCapacity(2): Len %d, match %d; want 2 and 2", n, m)
	}
	for i := range uint64(1000) { // memory stays flat whatever is recorded
		x.Record("a", []uint64{100 + i})
	}
	if n := x.Len("a"); n != 2 {
		t.Errorf("Len after 1000 records = %d, want 2", n)
	}
	x.SetCapacity("a", 4*MaxCapacity) // an engine's report beyond the bound is clamped
	if c := x.existing("a").capacity; c != MaxCapacity {
		t.Errorf("capacity after SetCapacity(4*MaxCapacity) = %d, want MaxCapacity %d", c, MaxCapacity)
	}
	x.Record("b", []uint64{1})
	x.Retain([]string{"b", "c"}) // a left the fleet
	if n, m := x.Len("a"), x.Len("b"); n != 0 || m != 1 {
		t.Errorf("after Retain(b, c): Len(a) %d, Len(b) %d; want 0 and 1", n, m)
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
