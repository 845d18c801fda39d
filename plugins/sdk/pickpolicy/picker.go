// Package pickpolicy holds the weighted-random-picker's logic, shared by the router's built-in of
// that type (host/builtin) and the plugin binary that serves it (plugins/picker). It orders a
// cycle's endpoints by a random draw weighted by their scores, so load spreads while better
// endpoints are favoured, and returns the whole order so the proxy can fail over down it.
//
// The order depends on the scores, the parameters and the cycle's seed alone, so the built-in and
// the binary give the same order for the same cycle. The built-in saves the round trip to a plugin
// process on the decision's critical path; the binary lets the picker be swapped, A/B-tested or
// shadowed as a process of its own (plugins/picker/README.md has the figures).
package pickpolicy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// Type is the plugin type declared in the host configuration.
const Type = "weighted-random-picker"

// Picker is the weighted-random-picker. Its Configure (from sdk.Params) merges params over
// Defaults, validates them and swaps them in atomically, so it is safe against concurrent Pick
// calls; on error the previous parameters stay in force. The zero value is not usable; call New.
type Picker struct {
	sdk.Params[Params]
}

var _ sdk.Picker = (*Picker)(nil)

// New returns a picker configured with Defaults.
func New() *Picker {
	p := &Picker{}
	p.Init(Defaults)
	return p
}

// Type returns "weighted-random-picker".
func (p *Picker) Type() string { return Type }

// Description returns one line saying what the picker does.
func (p *Picker) Description() string {
	return "orders endpoints by weighted random sampling over their scores (proportional, softmax or argmax), best first"
}

// Pick returns every index of c.Endpoints, best first, drawn from sdk.Rand(c, Type) so the same
// cycle always gives the same order.
//
// proportional and softmax draw a weighted random permutation (A-Res, Efraimidis–Spirakis): the
// first index is i with probability w_i/Σw, the next is drawn the same way from the rest, and so on.
// proportional uses w_i = s_i; softmax uses w_i = exp((s_i − max s)/temperature). Endpoints of
// weight zero (proportional: score ≤ 0) come after all others in uniformly random order. argmax
// sorts by score, descending, and orders equal scores at random so ties share the load. A
// non-finite score (NaN, ±Inf) counts as weight zero, and under argmax ranks last.
func (p *Picker) Pick(_ context.Context, c *sdk.Cycle, scores []float64) ([]int, error) {
	if c == nil {
		return nil, errors.New("picking: nil cycle")
	}
	if len(scores) != len(c.Endpoints) {
		return nil, fmt.Errorf("picking: got %d scores for %d endpoints, want one per endpoint", len(scores), len(c.Endpoints))
	}
	return order(p.Get(), sdk.Rand(c, Type), scores), nil
}

// candidate is one endpoint being ordered; candidates sort by tier ascending, then key descending,
// then tie and index ascending.
type candidate struct {
	index int
	// tier is 0 for endpoints with weight, 1 for those ranked last.
	tier int
	key  float64
	// tie is the endpoint's random draw; it orders equal keys and the whole of tier 1 at random.
	tie uint64
}

// order ranks scores under p, drawing one random number per endpoint from r; argmax is
// heuristics.RankByScore with the non-finite scores last (see argmax).
//
// The A-Res key u^(1/w) is computed as log w − log(−log u), the same order for the same u (the map
// from one to the other is strictly increasing) without underflow for small weights; for softmax it
// is (s − max)/temperature − log(−log u), so no exponential is taken at all.
func order(p *Params, r *rand.Rand, scores []float64) []int {
	if p.Strategy == StrategyArgmax {
		return argmax(scores, r)
	}
	top := math.Inf(-1)
	for _, s := range scores {
		if finite(s) {
			top = max(top, s)
		}
	}
	cands := make([]candidate, len(scores))
	for i, s := range scores {
		tie := r.Uint64()
		c := candidate{index: i, tier: 1, tie: tie}
		switch {
		case !finite(s):
		case p.Strategy == StrategySoftmax:
			c.tier, c.key = 0, (s-top)/p.Temperature+gumbel(tie)
		case s > 0: // proportional
			c.tier, c.key = 0, math.Log(s)+gumbel(tie)
		}
		cands[i] = c
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.tier != b.tier {
			return cmp.Compare(a.tier, b.tier)
		}
		if a.key != b.key {
			return cmp.Compare(b.key, a.key)
		}
		if a.tie != b.tie {
			return cmp.Compare(a.tie, b.tie)
		}
		return cmp.Compare(a.index, b.index)
	})
	out := make([]int, len(cands))
	for i, c := range cands {
		out[i] = c.index
	}
	return out
}

// argmax sorts scores descending, ties in random order from r, every non-finite score last, in
// random order. heuristics.RankByScore ranks NaN last but +Inf first, so ±Inf are passed to it as
// NaN; the copy that takes is made only when there is an infinity to replace.
func argmax(scores []float64, r *rand.Rand) []int {
	if slices.ContainsFunc(scores, func(s float64) bool { return math.IsInf(s, 0) }) {
		scores = slices.Clone(scores)
		for i, s := range scores {
			if math.IsInf(s, 0) {
				scores[i] = math.NaN()
			}
		}
	}
	return heuristics.RankByScore(scores, r)
}

// gumbel maps 53 bits of x to a uniform u strictly inside (0, 1) and returns −log(−log u), a
// standard Gumbel draw; adding it to log w and sorting descending is A-Res sampling.
func gumbel(x uint64) float64 {
	u := (float64(x>>11) + 0.5) / (1 << 53)
	return -math.Log(-math.Log(u))
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Reads declares the cycle fields the picker reads (sdk.Reader), so the host sends only those. It orders by the scores alone, so it needs nothing of the cycle but its size and seed.
func (p *Picker) Reads() []string {
	return []string{"endpoints.count"}
}
