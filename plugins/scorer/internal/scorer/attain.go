package scorer

import (
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// The attainment objective (README.md, "Objective: attainment"). The endpoints are in two tiers:
// those where the request is predicted to meet its TTFT objective, and the others; the first
// tier present is ranked, the other scores 0. Within it an endpoint is worth the expected number
// of requests served within their objectives that placing this request there gives — the
// probability that this request meets its TTFT and TPOT objectives there, minus what the
// placement takes from the requests in flight there, whose TPOT it raises. A prediction is read
// as the median of a log-normal latency whose spread (the standard deviation of
// ln(actual / predicted)) the producer measured there, or ttftSpread or tpotSpread.

// attainMeets is the tier of the endpoints where the request is predicted to meet its TTFT
// objective, ahead of missTTFT.
const attainMeets = missTTFT - 1

// attains reports whether the attainment objective decides c: it is configured, the request has
// an objective, and some endpoint has a usable prediction. Otherwise the headroom algorithm does.
func attains(c *sdk.Cycle, p *Params) bool {
	if p.Objective != ObjectiveAttainment || !c.Request.SLO.Any() {
		return false
	}
	for i := range c.Endpoints {
		if usable(&c.Endpoints[i].Prediction) {
			return true
		}
	}
	return false
}

// attainFrame is what attainScores computes over a cycle and ScoreAfter holds: the tier ranked,
// the best value in it and the lowest predicted TTFT in it.
type attainFrame struct {
	tier    int
	best    float64
	fastest float64
}

// attainLook is what the objective computes of one endpoint: whether its prediction is usable,
// its tier and its value (attainValue), each computed once per cycle.
type attainLook struct {
	usable bool
	tier   int
	value  float64
}

// attainLooks computes every endpoint's attainLook for c.
func attainLooks(c *sdk.Cycle, p *Params) []attainLook {
	out := make([]attainLook, len(c.Endpoints))
	for i := range c.Endpoints {
		if e := &c.Endpoints[i]; usable(&e.Prediction) {
			out[i] = attainLook{usable: true, tier: attainTier(&c.Request, e), value: attainValue(&c.Request, e, p)}
		}
	}
	return out
}

// attainFrameOf returns the frame of endpoints looked at as looks: the better tier among those with
// a usable prediction (attains says there is one), the highest value in it and the lowest
// predicted TTFT of c's endpoints in it. In a disaggregated request's prefill decision the
// fastest is the prefill endpoints' (when one is in the tier): the decode endpoint would serve the
// request whole, always the faster first token, bought with its decode steps, which its value
// weighs; its quickness is capped at the fastest prefill endpoint's, so the TTFT share ranks the
// prefill endpoints among themselves without pushing every request whole.
func attainFrameOf(c *sdk.Cycle, looks []attainLook) attainFrame {
	f := attainFrame{tier: missTTFT, best: math.Inf(-1), fastest: math.Inf(1)}
	for _, l := range looks {
		if l.usable {
			f.tier = min(f.tier, l.tier)
		}
	}
	whole := math.Inf(1) // the decode endpoint's, in a prefill decision
	for i, l := range looks {
		if l.usable && l.tier == f.tier {
			f.best = max(f.best, l.value)
			e := &c.Endpoints[i]
			if c.Request.Disaggregation.Hop == sdk.HopPrefill && c.Request.HopOn(e.ID) == sdk.HopWhole {
				whole = min(whole, e.Prediction.TTFTMs)
				continue
			}
			f.fastest = min(f.fastest, e.Prediction.TTFTMs)
		}
	}
	if math.IsInf(f.fastest, 1) { // the decode endpoint alone in the tier
		f.fastest = whole
	}
	return f
}

// attainScores scores c's endpoints in the frame's tier by attainScore, the others 0.
func attainScores(c *sdk.Cycle, p *Params) []float64 {
	looks := attainLooks(c, p)
	return attainScoresIn(c, looks, attainFrameOf(c, looks), p)
}

// attainScoresAfter is ScoreAfter for the attainment objective: endpoint i's score with one more
// request like c's placed there first (heuristics.PlacedEach), in c's own frame, so only the
// placed endpoint's score moves: an endpoint the placement takes out of the tier scores 0.
func attainScoresAfter(c *sdk.Cycle, p *Params) []float64 {
	placed := heuristics.PlacedEach(c)
	return attainScoresIn(placed, attainLooks(placed, p), attainFrameOf(c, attainLooks(c, p)), p)
}

func attainScoresIn(c *sdk.Cycle, looks []attainLook, f attainFrame, p *Params) []float64 {
	out := make([]float64, len(c.Endpoints))
	for i, l := range looks {
		if l.usable && l.tier == f.tier {
			out[i] = attainScore(&c.Request, &c.Endpoints[i], l.value, f, p)
		}
	}
	return out
}

// attainTier is e's tier for r: attainMeets where r's predicted TTFT is within its TTFT objective
// (or it has none), missTTFT where it is over. TPOT makes no tier: the probability of meeting it
// and the cost to the requests running there rank within the tier, which lets a request that
// would miss its TPOT everywhere go where it costs the others least (README.md has the figures
// of a TPOT tier too).
func attainTier(r *sdk.Request, e *sdk.Endpoint) int {
	if r.SLO.TTFTMs > 0 && e.Prediction.TTFTMs > r.SLO.TTFTMs {
		return missTTFT
	}
	return attainMeets
}

// attainScore maps the value (attainValue) of an endpoint with a usable prediction onto
// [minRankedScore, 1] by its shortfall from the best value: 1 for the best, one point less per
// request of expected attainment less, floored at 0; that on 1 − ttftShare of the scale, and on
// the rest the request's predicted TTFT there, the lower the higher (quickness). With a small
// share the scale is the value's own, so a picker's temperature reads in expected requests.
func attainScore(r *sdk.Request, e *sdk.Endpoint, value float64, f attainFrame, p *Params) float64 {
	v := max(1-(f.best-value), 0)
	q := quickness(r, e.Prediction.TTFTMs, f.fastest, p.TTFTReference)
	return minRankedScore + (1-minRankedScore)*((1-p.TTFTShare)*v+p.TTFTShare*q)
}

// quickness maps a predicted TTFT onto (0, 1], the lower the higher, against the reference
// (Params.TTFTReference): the request's TTFT objective (1 s without one), where it scores ½, or
// the fastest endpoint's predicted TTFT (at least 1 ms), where it scores 1, ½ at twice that.
// After a placement an endpoint may be faster than the fastest was: its quickness is capped at 1.
func quickness(r *sdk.Request, ttft, fastest float64, reference string) float64 {
	ttft = max(ttft, 0)
	if reference == ReferenceFastest {
		ref := max(fastest, 1)
		return ref / max(ttft, ref)
	}
	ref := r.SLO.TTFTMs
	if ref <= 0 {
		ref = 1000
	}
	return 1 / (1 + ttft/ref)
}

// attainValue is the expected number of requests served within their objectives that placing r on
// e gives: r's probability of meeting them there, less the probability the requests in flight
// there lose. The loss counts when the tightest TPOT objective running there is known and the
// producer said what one more placement does to TPOT (Prediction.TPOTAfterMs): each of the
// router's requests in flight there goes from its TPOT now to that TPOT raised by placementCost
// of the rise to the predicted TPOT with r placed (the after-prediction), against that objective.
// Its TPOT now is, with runningTPOT observed, the TPOT the router's streams there have seen so
// far (State.RunningTPOTMs), else, or before one has two tokens, the predicted TPOT (what a
// request placed on the endpoint as it is sees). A prediction is read with the spread the
// producer measured on the endpoint (Prediction.TTFTSpread, TPOTSpread), or the configured one.
func attainValue(r *sdk.Request, e *sdk.Endpoint, p *Params) float64 {
	pr := &e.Prediction
	ttftSpread, tpotSpread := spreadOr(pr.TTFTSpread, p.TTFTSpread), spreadOr(pr.TPOTSpread, p.TPOTSpread)
	meet := meetProb(r.SLO.TTFTMs, pr.TTFTMs, ttftSpread)
	if r.Streaming && r.SLO.TPOTMs > 0 && pr.TPOTMs > 0 {
		meet *= meetProb(r.SLO.TPOTMs*p.SLOBufferFactor, pr.TPOTMs, tpotSpread)
	}
	slo, n := e.State.MinRunningTPOTSLOMs*p.SLOBufferFactor, float64(e.State.InflightRequests)
	if slo <= 0 || n <= 0 || !(pr.TPOTMs > 0) || !(pr.TPOTAfterMs > pr.TPOTMs) {
		return meet
	}
	running := pr.TPOTMs
	if p.RunningTPOT == RunningObserved && e.State.RunningTPOTMs > 0 {
		running = e.State.RunningTPOTMs
	}
	after := running + p.PlacementCost*(pr.TPOTAfterMs-pr.TPOTMs)
	loss := meetProb(slo, running, tpotSpread) - meetProb(slo, after, tpotSpread)
	return meet - n*loss
}

// spreadOr is the producer's spread when it gives one (> 0), else the configured one.
func spreadOr(learned, configured float64) float64 {
	if learned > 0 && !math.IsInf(learned, 1) {
		return learned
	}
	return configured
}

// meetProb is the probability that a latency whose median is predicted and whose log has
// standard deviation spread stays within objective: Φ(ln(objective / predicted) / spread); 1
// without an objective (≤ 0), and for a prediction of 0 (none).
func meetProb(objective, predicted, spread float64) float64 {
	if objective <= 0 || predicted <= 0 {
		return 1
	}
	z := math.Log(objective/predicted) / spread
	return 0.5 * math.Erfc(-z/math.Sqrt2)
}
