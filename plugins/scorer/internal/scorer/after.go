package scorer

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

var _ sdk.RoundScorer = (*Scorer)(nil)

// ScoreAfter returns, per endpoint i of a cycle in a round, the score i would get had one more
// request like c's been placed on it first, on the scale of c's scores: i's own inputs move as
// sdk.PlaceOn(copy, i, 1) moves them (its predictions to the producer's after-predictions, one
// more request in flight there), and everything score computes over the candidates is held (the
// group it ranks, each dimension's bounds, the fallback's queue bounds). So a placement changes no
// other endpoint's score, and an after-score may fall outside [0, 1]. An endpoint that the
// placement leaves outside the group ranks below every endpoint in it (outsideScore).
func (s *Scorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if c == nil {
		return nil, errors.New("scoring after a placement: nil cycle")
	}
	if len(scores) != len(c.Endpoints) {
		return nil, fmt.Errorf("scoring after a placement: got %d scores for %d endpoints, want one per endpoint", len(scores), len(c.Endpoints))
	}
	return scoreAfter(c, s.Get()), nil
}

// scoreAfter computes ScoreAfter's scores.
func scoreAfter(c *sdk.Cycle, p *Params) []float64 {
	if attains(c, p) {
		return attainScoresAfter(c, p)
	}
	placed := heuristics.PlacedEach(c)
	f, outlooks := frameOf(c, p)
	if f == nil {
		return heuristics.CompositeScoresAfter(c, placed, p.CompositeParams)
	}
	moved := make([]outlook, len(c.Endpoints))
	for i := range moved {
		moved[i] = outlookOf(&c.Request, &placed.Endpoints[i], p)
	}
	f.setUnits(outlooks, moved, p)
	after := make([]float64, len(c.Endpoints))
	lowest, highest := 0.0, 1.0
	for i := range moved {
		if f.holds(&moved[i]) {
			after[i] = f.rank(&moved[i], p)
			lowest, highest = min(lowest, after[i]), max(highest, after[i])
		}
	}
	for i := range moved {
		switch {
		case f.holds(&moved[i]):
		case f.above(&moved[i]):
			after[i] = highest + minRankedScore
		default:
			after[i] = outsideScore(lowest)
		}
	}
	return after
}

// outsideScore is the after-score of an endpoint that a placement leaves outside the group
// score ranks and not in a tier above it (it stops meeting the SLO, leaves the idle set or a
// deficit group, or was outside already), whether or not another endpoint is outside the group
// now: one minRankedScore below the lower of 0 (what score gives such an endpoint) and lowest,
// the lowest after-score of an endpoint the group holds after its placement. So it ranks below
// every endpoint the group holds before or after a placement, as score ranks every endpoint
// outside the group below every one inside, and below its own score (≥ 0): a placement never
// makes it better.
func outsideScore(lowest float64) float64 { return min(0, lowest) - minRankedScore }

// above reports whether an endpoint whose outlook is o falls in a tier score prefers to the
// frame's group: it meets the SLO, or misses a less severe objective, where the group misses it
// (tierMiss, not among the idle endpoints only: a placed endpoint is never idle). Only an
// after-prediction below the prediction moves an endpoint there; ScoreAfter then ranks it above
// every endpoint of the group, one minRankedScore above the higher of 1 and their after-scores.
func (f *frame) above(o *outlook) bool {
	return f.tier == tierMiss && o.usable && (o.meets || (!f.idleOnly && o.miss < f.miss))
}

// setUnits gives each dimension of the frame without spread its scale for a placement: the
// largest move of a member's value in it that one placement makes (outlooks as they are, moved
// as placed). Where every member scores 1, the scores then fall by the weighted share of that
// scale a placement takes, so a burst spreads over equal endpoints as it would one at a time.
func (f *frame) setUnits(outlooks, moved []outlook, p *Params) {
	for i := range outlooks {
		if !f.holds(&outlooks[i]) || !moved[i].usable {
			continue
		}
		now, then := f.values(&outlooks[i], p), f.values(&moved[i], p)
		for k, d := range f.dims {
			if step := math.Abs(then[k] - now[k]); !d.spread() && !math.IsNaN(step) && !math.IsInf(step, 0) {
				f.dims[k].unit = max(d.unit, step)
			}
		}
	}
}
