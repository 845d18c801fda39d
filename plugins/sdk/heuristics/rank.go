package heuristics

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// RankByScore returns every index of scores, best first: by score, descending, with equal scores
// in random order drawn from r (then by index, should two draws be equal). A NaN score counts as
// −Inf, so it ranks last, in random order with any −Inf; +Inf ranks first. RankByScore draws
// exactly one r.Uint64() per score, in index order, whatever the scores, so an order is
// reproducible from r's seed. A caller that wants ±Inf last too passes them as NaN.
func RankByScore(scores []float64, r *rand.Rand) []int {
	type ranked struct {
		index int
		score float64
		tie   uint64
	}
	rs := make([]ranked, len(scores))
	for i, s := range scores {
		if math.IsNaN(s) {
			s = math.Inf(-1)
		}
		rs[i] = ranked{index: i, score: s, tie: r.Uint64()}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.score != b.score { // no NaN is left, and comparing first keeps the sort fast
			return cmp.Compare(b.score, a.score)
		}
		if a.tie != b.tie {
			return cmp.Compare(a.tie, b.tie)
		}
		return cmp.Compare(a.index, b.index)
	})
	order := make([]int, len(rs))
	for i, x := range rs {
		order[i] = x.index
	}
	return order
}

// AllIndices returns 0, 1, …, n−1: the verdict of a filter that keeps every endpoint.
func AllIndices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// FirstMax returns the position of the highest score, the first among equals (0 when there are
// none): a max-score picker's choice without a random tie-break.
func FirstMax(scores []float64) int {
	best := 0
	for i, v := range scores {
		if v > scores[best] {
			best = i
		}
	}
	return best
}
