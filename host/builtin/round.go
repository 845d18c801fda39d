package builtin

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// Every built-in scorer says itself what a round's placement does to its scores (sdk.RoundScorer):
// the queue scorers' queue moves with the in-flight ledger, the KV usage and the prefix match do
// not move at all. Without it the host would re-score every cycle once per endpoint.
var (
	_ sdk.RoundScorer = (*QueueScorer)(nil)
	_ sdk.RoundScorer = (*KVCacheScorer)(nil)
	_ sdk.RoundScorer = (*PrefixScorer)(nil)
	_ sdk.RoundScorer = (*CompositeScorer)(nil)
)

// ScoreAfter returns, per endpoint i, the queue score i would get with one more request like c's
// placed on it (sdk.PlaceOn(c, i, 1)) and every other endpoint as it is: its queue one longer,
// normalised against the others' queues.
func (s *QueueScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if err := checkRoundScores(c, scores); err != nil {
		return nil, err
	}
	return queueScoresAfter(c, placedCycle(c), heuristics.Queue(s.Get().Source)), nil
}

// ScoreAfter returns scores unchanged: a placement does not move the scraped KV usage until the
// next scrape (sdk.PlaceOn).
func (s *KVCacheScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if err := checkRoundScores(c, scores); err != nil {
		return nil, err
	}
	return slices.Clone(scores), nil
}

// ScoreAfter returns scores unchanged: a placement does not move the prefix match (a request of
// the round with the same prefix raises it, which the host checks on its own, sdk.PlaceOn).
func (s *PrefixScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if err := checkRoundScores(c, scores); err != nil {
		return nil, err
	}
	return slices.Clone(scores), nil
}

// ScoreAfter returns, per endpoint i, the composite score i would get with one more request like
// c's placed on it and every other endpoint as it is: its queue term from queueScoresAfter, its
// KV and prefix terms as they are.
func (s *CompositeScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if err := checkRoundScores(c, scores); err != nil {
		return nil, err
	}
	w := *s.Get()
	total := w.KVCache + w.Queue + w.Prefix
	if total <= 0 {
		return make([]float64, len(c.Endpoints)), nil
	}
	placed := placedCycle(c)
	after := queueScoresAfter(c, placed, heuristics.Queue(w.QueueSource))
	kv, prefix := heuristics.KVCacheScores(placed), heuristics.PrefixScores(placed)
	for i := range after {
		after[i] = (w.KVCache*kv[i] + w.Queue*after[i] + w.Prefix*prefix[i]) / total
	}
	return after, nil
}

// checkRoundScores returns an error unless c is a cycle and scores has one score per endpoint.
func checkRoundScores(c *sdk.Cycle, scores []float64) error {
	if err := checkCycle("scoring after a placement", c); err != nil {
		return err
	}
	if len(scores) != len(c.Endpoints) {
		return fmt.Errorf("scoring after a placement: got %d scores for %d endpoints, want one per endpoint", len(scores), len(c.Endpoints))
	}
	return nil
}

// placedCycle returns a copy of c in which every endpoint i is as sdk.PlaceOn(c, i, 1) leaves it.
// PlaceOn changes only the endpoint it places on, so the copy's endpoint i is endpoint i of a copy
// with only i placed.
func placedCycle(c *sdk.Cycle) *sdk.Cycle {
	placed := &sdk.Cycle{Request: c.Request, Endpoints: slices.Clone(c.Endpoints)}
	for i := range placed.Endpoints {
		sdk.PlaceOn(placed, i, 1)
	}
	return placed
}

// queueScoresAfter returns, per endpoint i, heuristics.QueueScores' score of endpoint i on a copy
// of c with only i placed on, placed being placedCycle(c): (maxQ − q)/(maxQ − minQ) with i's queue as placed
// and the others' as they are, 1 when they are all equal. The two lowest and the two highest
// queues give every endpoint's min and max over the others in one pass.
func queueScoresAfter(c, placed *sdk.Cycle, queue func(*sdk.EndpointState) int64) []float64 {
	e := newExtremes()
	for i := range c.Endpoints {
		e.add(i, queue(&c.Endpoints[i].State))
	}
	scores := make([]float64, len(c.Endpoints))
	for i, ep := range placed.Endpoints {
		q := queue(&ep.State)
		lo, hi := e.others(i)
		lo, hi = min(lo, q), max(hi, q)
		if hi == lo {
			scores[i] = 1
			continue
		}
		scores[i] = float64(hi-q) / float64(hi-lo)
	}
	return scores
}

// extremes keeps the two lowest and the two highest values of a set and which members hold the
// lowest and the highest: enough for the min and max of the set without any one member.
type extremes struct {
	lo, lo2, hi, hi2 int64
	loAt, hiAt       int
}

// newExtremes returns an empty set.
func newExtremes() extremes {
	return extremes{lo: math.MaxInt64, lo2: math.MaxInt64, hi: math.MinInt64, hi2: math.MinInt64, loAt: -1, hiAt: -1}
}

// add adds member i's value v.
func (e *extremes) add(i int, v int64) {
	switch {
	case v < e.lo:
		e.lo2, e.lo, e.loAt = e.lo, v, i
	case v < e.lo2:
		e.lo2 = v
	}
	switch {
	case v > e.hi:
		e.hi2, e.hi, e.hiAt = e.hi, v, i
	case v > e.hi2:
		e.hi2 = v
	}
}

// others returns the min and max of the members other than i: math.MaxInt64 and math.MinInt64
// when there are none, which min and max with any value pass over.
func (e *extremes) others(i int) (lo, hi int64) {
	lo, hi = e.lo, e.hi
	if i == e.loAt {
		lo = e.lo2
	}
	if i == e.hiAt {
		hi = e.hi2
	}
	return lo, hi
}
