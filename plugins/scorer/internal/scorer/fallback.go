package scorer

import (
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// compositeAfter returns, per endpoint i, heuristics.CompositeScores' score of endpoint i on a
// copy of c with only i placed on, placed being c with every endpoint placed once: i's queue as
// placed, min–max normalised against the other endpoints' queues as they are, and i's KV and
// prefix terms as placed (a placement moves neither).
func compositeAfter(c, placed *sdk.Cycle, w heuristics.CompositeParams) []float64 {
	total := w.KVCache + w.Queue + w.Prefix
	if total <= 0 {
		return make([]float64, len(c.Endpoints))
	}
	queue := heuristics.Queue(w.QueueSource)
	e := newExtremes()
	for i := range c.Endpoints {
		e.add(i, queue(&c.Endpoints[i].State))
	}
	kv, prefix := heuristics.KVCacheScores(placed), heuristics.PrefixScores(placed)
	scores := make([]float64, len(c.Endpoints))
	for i := range placed.Endpoints {
		q := queue(&placed.Endpoints[i].State)
		lo, hi := e.others(i)
		lo, hi = min(lo, q), max(hi, q)
		qs := 1.0
		if hi != lo {
			qs = float64(hi-q) / float64(hi-lo)
		}
		scores[i] = (w.KVCache*kv[i] + w.Queue*qs + w.Prefix*prefix[i]) / total
	}
	return scores
}

// extremes keeps the two lowest and the two highest queues of a cycle and which endpoints hold
// the lowest and the highest: enough for the min and max without any one endpoint.
type extremes struct {
	lo, lo2, hi, hi2 int64
	loAt, hiAt       int
}

func newExtremes() extremes {
	return extremes{lo: math.MaxInt64, lo2: math.MaxInt64, hi: math.MinInt64, hi2: math.MinInt64, loAt: -1, hiAt: -1}
}

// add adds endpoint i's queue v.
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

// others returns the min and max of the queues other than endpoint i's: math.MaxInt64 and
// math.MinInt64 when there are none, which min and max with any queue pass over.
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
