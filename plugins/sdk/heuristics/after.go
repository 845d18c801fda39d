package heuristics

import (
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// What a round's placement does to the heuristic scores (see sdk.Round and sdk.RoundScorer): each
// endpoint's score had one more request like the cycle's been placed there, on the scale of the
// cycle's current scores — what the scores are normalised by is held as the cycle has it, so a
// placement moves that endpoint's score only, and may take it below 0.

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

// QueueScoresAfter returns, per endpoint i, QueueScores' score of endpoint i with its queue as
// placed holds it (placed is PlacedEach(c)), on the scale of c's current scores: (maxQ − q′) /
// (maxQ − minQ) with maxQ and minQ over c's current queues, and a scale of one unit of queue when
// they are all equal (every endpoint scores 1 then, and 0 with one more request). Queues [1, 1, 0,
// 0] score [0, 0, 1, 1] and, one request more on each, [−1, −1, 0, 0].
func QueueScoresAfter(c, placed *sdk.Cycle, queue func(*sdk.EndpointState) int64) []float64 {
	scores := make([]float64, len(c.Endpoints))
	lo, hi := queueBounds(c, queue)
	for i := range scores {
		q := queue(&placed.Endpoints[i].State)
		if hi == lo {
			scores[i] = 1 - float64(q-lo)
			continue
		}
		scores[i] = float64(hi-q) / float64(hi-lo)
	}
	return scores
}

// CompositeScoresAfter returns, per endpoint i, CompositeScores' score of endpoint i as placed
// holds it (placed is PlacedEach(c)), on the scale of c's current scores: its queue term from
// QueueScoresAfter, its KV and prefix terms as placed (a placement moves neither).
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
