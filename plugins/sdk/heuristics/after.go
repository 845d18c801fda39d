package heuristics

import (
	"math"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// What a round's placement does to the heuristic scores (see sdk.Round): a scorer built on them
// says its after-scores with these instead of scoring once per endpoint.

// PlacedEach returns a copy of c in which every endpoint i is as sdk.PlaceOn(c, i, 1) leaves it.
// PlaceOn changes only the endpoint it places on, so the copy's endpoint i is endpoint i of a copy
// with only i placed on.
func PlacedEach(c *sdk.Cycle) *sdk.Cycle {
	placed := &sdk.Cycle{Request: c.Request, Now: c.Now, Seed: c.Seed, Round: c.Round, Endpoints: slices.Clone(c.Endpoints)}
	for i := range placed.Endpoints {
		sdk.PlaceOn(placed, i, 1)
	}
	return placed
}

// QueueScoresAfter returns, per endpoint i, QueueScores' score of endpoint i on a copy of c with
// only i placed on, placed being PlacedEach(c): i's queue as placed, min–max normalised against
// the other endpoints' queues as they are (1 when all are equal). The two lowest and the two
// highest queues give every endpoint's min and max over the others in one pass.
func QueueScoresAfter(c, placed *sdk.Cycle, queue func(*sdk.EndpointState) int64) []float64 {
	e := newExtremes()
	for i := range c.Endpoints {
		e.add(i, queue(&c.Endpoints[i].State))
	}
	scores := make([]float64, len(c.Endpoints))
	for i := range placed.Endpoints {
		q := queue(&placed.Endpoints[i].State)
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

// CompositeScoresAfter returns, per endpoint i, CompositeScores' score of endpoint i on a copy of
// c with only i placed on, placed being PlacedEach(c): its queue term from QueueScoresAfter, its
// KV and prefix terms as placed (a placement moves neither).
func CompositeScoresAfter(c, placed *sdk.Cycle, w CompositeParams) []float64 {
	total := w.KVCache + w.Queue + w.Prefix
	if total <= 0 {
		return make([]float64, len(c.Endpoints))
	}
	after := QueueScoresAfter(c, placed, Queue(w.QueueSource))
	kv, prefix := KVCacheScores(placed), PrefixScores(placed)
	for i := range after {
		after[i] = (w.KVCache*kv[i] + w.Queue*after[i] + w.Prefix*prefix[i]) / total
	}
	return after
}

// extremes keeps the two lowest and the two highest values of a set and which members hold the
// lowest and the highest: enough for the min and max of the set without any one member.
type extremes struct {
	lo, lo2, hi, hi2 int64
	loAt, hiAt       int
}

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
