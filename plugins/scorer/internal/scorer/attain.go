package scorer

import (
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// The attainment objective (README.md, "Objective: attainment"): an endpoint is worth the
// expected number of requests served within their objectives that placing this request there
// gives — the probability that this request meets its TTFT and TPOT objectives there, minus what
// the placement takes from the requests in flight there, whose TPOT it raises. A prediction is
// read as the median of a log-normal latency whose spread (the standard deviation of
// ln(actual / predicted)) is ttftSpread or tpotSpread.

// attainTieWeight is the share of the score that breaks ties by predicted TTFT: endpoints whose
// expected attainment differs by less than about this much are ranked by TTFT.
const attainTieWeight = 0.02

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

// attainScores scores every endpoint of c by attainScore; an endpoint without a usable
// prediction scores 0.
func attainScores(c *sdk.Cycle, p *Params) []float64 {
	out := make([]float64, len(c.Endpoints))
	for i := range c.Endpoints {
		out[i] = attainScore(&c.Request, &c.Endpoints[i], p)
	}
	return out
}

// attainScoresAfter is ScoreAfter for the attainment objective: endpoint i's score with one more
// request like c's placed there first (heuristics.PlacedEach). The score is a function of the
// endpoint alone, so nothing else is held.
func attainScoresAfter(c *sdk.Cycle, p *Params) []float64 {
	return attainScores(heuristics.PlacedEach(c), p)
}

// attainScore maps attainValue onto [minRankedScore, 1]: clamped to [0, 1], less the tie share,
// plus that share for a lower predicted TTFT; 0 without a usable prediction.
func attainScore(r *sdk.Request, e *sdk.Endpoint, p *Params) float64 {
	pr := &e.Prediction
	if !usable(pr) {
		return 0
	}
	v := min(max(attainValue(r, e, p), 0), 1)
	ref := r.SLO.TTFTMs
	if ref <= 0 {
		ref = 1000
	}
	tie := 1 / (1 + max(pr.TTFTMs, 0)/ref) // 1 at no TTFT, ½ at the objective
	return minRankedScore + (1-minRankedScore)*((1-attainTieWeight)*v+attainTieWeight*tie)
}

// attainValue is the expected number of requests served within their objectives that placing r on
// e gives: r's probability of meeting them there, less the probability the requests in flight
// there lose. The loss counts when the tightest TPOT objective running there is known and the
// producer said what one more placement does to TPOT (Prediction.TPOTAfterMs, in a round): each
// of the router's requests in flight there goes from the TPOT before r (TPOT − that rise) to r's
// own predicted TPOT, against that objective.
func attainValue(r *sdk.Request, e *sdk.Endpoint, p *Params) float64 {
	pr := &e.Prediction
	meet := meetProb(r.SLO.TTFTMs, pr.TTFTMs, p.TTFTSpread)
	if r.Streaming && r.SLO.TPOTMs > 0 && pr.TPOTMs > 0 {
		meet *= meetProb(r.SLO.TPOTMs*p.SLOBufferFactor, pr.TPOTMs, p.TPOTSpread)
	}
	slo, n := e.State.MinRunningTPOTSLOMs*p.SLOBufferFactor, float64(e.State.InflightRequests)
	rise := pr.TPOTAfterMs - pr.TPOTMs
	if slo <= 0 || n <= 0 || pr.TPOTMs <= 0 || pr.TPOTAfterMs <= 0 || rise <= 0 || rise >= pr.TPOTMs {
		return meet
	}
	loss := meetProb(slo, pr.TPOTMs-rise, p.TPOTSpread) - meetProb(slo, pr.TPOTMs, p.TPOTSpread)
	return meet - n*loss
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
