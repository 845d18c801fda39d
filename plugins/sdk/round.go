package sdk

import (
	"context"
	"math"
)

// Round places a cycle among the requests the host decides together. The host decides a round as
// if its requests were decided one at a time in arrival order, each after the earlier ones were
// placed on their first choice, but with one call per stage for the whole round: the producer says
// what each request would see on each endpoint after one more request like it
// (Prediction.TTFTAfterMs), each scorer what each endpoint's score would become (RoundScorer), and
// the picker places the round's cycles in order against those figures
// (PlaceOn). The zero Round is a request decided alone. A round may hold one cycle: a request the
// host decides after an earlier round it has not yet dispatched, whose placements the host then
// adds to the after-scores itself. (A stage built with an SDK that read a round of one as a cycle
// decided alone stays correct: it gives no after-scores, and the host decides that request again
// if its pick collides with the earlier round's.)
type Round struct {
	// Position is the cycle's place in the round, from 0, in arrival order.
	Position int `json:"position"`
	// Size is how many cycles the round holds, at least 1; 0 for a cycle decided alone.
	Size int `json:"size"`
}

// InRound reports whether the cycle is decided in a round: with other requests, or after an
// earlier round (Round).
func (c *Cycle) InRound() bool { return c.Round.Size > 0 }

// UncachedTokens is the part of the request's prompt that endpoint e is not believed to cache: the
// prefill work the request brings there.
func (c *Cycle) UncachedTokens(e int) int64 {
	if c.Request.HopOn(c.Endpoints[e].ID) == HopDecode { // its prompt arrives as KV
		return 0
	}
	match := min(max(c.Endpoints[e].State.PrefixMatch, 0), 1)
	return int64(math.Round(float64(c.Request.InputTokens) * (1 - match)))
}

// PlaceOn changes endpoint e of c as the router's in-flight ledger would after n more requests like
// c's request had been dispatched there: n more requests in flight and dispatched since the scrape,
// n times its uncached prompt tokens in prefill, and its predictions moved n times by what one
// placement does (TTFTAfterMs − TTFTMs, TPOTAfterMs − TPOTMs, where the producer said). The prefix
// match stays as it is: a request of the round with the same prefix raises it, which the host
// checks on its own. Engine gauges (waiting, running, KV usage) stay as scraped, as they would
// until the next scrape. The spreads (TTFTSpread, TPOTSpread) stay too: they describe how well
// the producer has been predicting on the endpoint, which a placement does not change.
func PlaceOn(c *Cycle, e, n int) {
	if n <= 0 {
		return
	}
	ep := &c.Endpoints[e]
	k := int64(n)
	ep.State.InflightRequests += k
	ep.State.DispatchedSinceScrape += k
	ep.State.PrefillTokensInFlight += k * c.UncachedTokens(e)
	p := &ep.Prediction
	if p.TTFTAfterMs > 0 {
		d := p.TTFTAfterMs - p.TTFTMs
		p.TTFTMs += float64(n) * d
		p.TTFTAfterMs += float64(n) * d
	}
	if p.TPOTAfterMs > 0 && p.TPOTMs > 0 {
		d := p.TPOTAfterMs - p.TPOTMs
		p.TPOTMs += float64(n) * d
		p.TPOTAfterMs += float64(n) * d
	}
}

// RoundScorer is a Scorer that says how its scores change as a round places requests. The SDK
// asks ScoreAfter only for cycles in a round. A Scorer without it says nothing, and the host
// decides again the members of a round whose picks collide, as it would without rounds.
//
// After-scores are on the scale of the cycle's current scores: whatever the scorer computes over
// the candidates (a min and a max it normalises by, a tier's bounds) is held as the cycle has it,
// and only endpoint i's own inputs move, as PlaceOn(c, i, 1) moves them. A placement then moves
// that endpoint's score and no other, so a picker can add placements up; an after-score may fall
// outside [0, 1]. (Scoring a copy with i placed on would renormalise: with queues [1, 1, 0, 0], one
// more request on the third makes all four equal, every score 1 — a move of the other endpoints'
// scores that one after-score per endpoint cannot carry. Held, the after-scores are
// [−1, −1, 0, 0].)
type RoundScorer interface {
	Scorer
	// ScoreAfter returns, per endpoint i of c, the score c's request would get there had one more
	// request like it been placed there first (PlaceOn(c, i, 1)), on the scale of scores, c's own
	// scores.
	ScoreAfter(ctx context.Context, c *Cycle, scores []float64) ([]float64, error)
}
