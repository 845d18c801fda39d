package heuristics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRankByScore(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name   string
		scores []float64
		// groups are the expected ranks, best first. The indices within a group are tied, so any
		// order of them is right; over 200 seeds each index tied for first must come first once.
		groups [][]int
	}{
		{name: "no scores", scores: nil, groups: nil},
		{name: "one score", scores: []float64{0.4}, groups: [][]int{{0}}},
		{name: "descending", scores: []float64{0.1, 0.9, 0.5}, groups: [][]int{{1}, {2}, {0}}}, // 0.9 > 0.5 > 0.1
		{name: "negative scores keep their order", scores: []float64{-1, 0, -0.5}, groups: [][]int{{1}, {2}, {0}}},
		{name: "two-way tie", scores: []float64{0.3, 0.9, 0.9}, groups: [][]int{{1, 2}, {0}}},
		{name: "all equal", scores: []float64{0.5, 0.5, 0.5, 0.5}, groups: [][]int{{0, 1, 2, 3}}},
		{name: "zero and negative zero tie", scores: []float64{0, math.Copysign(0, -1)}, groups: [][]int{{0, 1}}},
		{name: "NaN last", scores: []float64{nan, 0, 0.3}, groups: [][]int{{2}, {1}, {0}}}, // 0.3 > 0 > NaN
		{name: "NaN ties with -Inf", scores: []float64{nan, -inf, 0.2}, groups: [][]int{{2}, {0, 1}}},
		{name: "+Inf first, -Inf last", scores: []float64{-inf, 0.5, inf}, groups: [][]int{{2}, {1}, {0}}},
		{name: "all NaN", scores: []float64{nan, nan, nan}, groups: [][]int{{0, 1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			firsts := map[int]bool{}
			for seed := range uint64(200) {
				got := RankByScore(tt.scores, rand.New(rand.NewPCG(seed, 7)))
				if len(got) != len(tt.scores) {
					t.Fatalf("seed %d: RankByScore(%v) = %v, want %d indices", seed, tt.scores, got, len(tt.scores))
				}
				rest := got
				for _, g := range tt.groups {
					head := slices.Clone(rest[:len(g)])
					slices.Sort(head)
					if !slices.Equal(head, g) {
						t.Fatalf("seed %d: RankByScore(%v) = %v, want the ranks %v", seed, tt.scores, got, tt.groups)
					}
					rest = rest[len(g):]
				}
				if len(tt.groups) > 0 {
					firsts[got[0]] = true
				}
			}
			if len(tt.groups) > 0 {
				for _, i := range tt.groups[0] {
					if !firsts[i] {
						t.Errorf("index %d, tied for first, never came first in 200 seeds", i)
					}
				}
			}
		})
	}
}

func TestRankByScoreTiesShareFirstPlace(t *testing.T) {
	// Indices 0, 2 and 3 tie at 0.9: over 3,000 seeds each should come first about 1,000 times
	// (binomial standard deviation √(3000 · 1/3 · 2/3) ≈ 26, so ±150 is over 5 deviations).
	scores := []float64{0.9, 0.3, 0.9, 0.9}
	counts := map[int]int{}
	for seed := range uint64(3000) {
		counts[RankByScore(scores, rand.New(rand.NewPCG(seed, 0)))[0]]++
	}
	for _, i := range []int{0, 2, 3} {
		if c := counts[i]; c < 850 || c > 1150 {
			t.Errorf("index %d first in %d of 3000 seeds, want about 1000", i, c)
		}
	}
	if counts[1] != 0 {
		t.Errorf("index 1 (0.3) first in %d seeds, want never", counts[1])
	}
}

func TestRankByScoreDrawsOncePerScore(t *testing.T) {
	// The same seed gives the same order, and r is left as after len(scores) draws of Uint64,
	// whatever the scores, so a stage drawing more from r afterwards stays reproducible.
	for _, scores := range [][]float64{nil, {0.5}, {0.1, math.NaN(), math.Inf(1), 0.1}} {
		r1, r2 := rand.New(rand.NewPCG(42, 1)), rand.New(rand.NewPCG(42, 1))
		a, b := RankByScore(scores, r1), RankByScore(scores, r2)
		if !slices.Equal(a, b) {
			t.Errorf("RankByScore(%v) gave %v, then %v from the same seed", scores, a, b)
		}
		ref := rand.New(rand.NewPCG(42, 1))
		for range scores {
			ref.Uint64()
		}
		if got, want := r1.Uint64(), ref.Uint64(); got != want {
			t.Errorf("RankByScore(%v) did not draw exactly %d numbers from r", scores, len(scores))
		}
	}
}
