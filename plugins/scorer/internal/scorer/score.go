package scorer

import (
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// minRankedScore is the lowest score of an endpoint the scorer ranks, so the worst of the ranked
// endpoints stays distinguishable from the excluded ones (which score 0) and keeps a small chance
// with a proportional picker. llm-d's scorer floors its ranked endpoints the same way (at 0.02).
const minRankedScore = 0.01

// eps is the smallest difference, in milliseconds, that counts as spread within a dimension.
const eps = 1e-9

// member is one endpoint the scorer ranks: its index in the cycle and its distance from the SLO
// boundary (or its predicted latency) in the TTFT and TPOT dimensions.
type member struct {
	idx        int
	ttft, tpot float64
}

// score is the whole algorithm for one cycle; every step is explained in README.md.
func score(c *sdk.Cycle, p *Params) []float64 {
	scores := make([]float64, len(c.Endpoints))
	var predicted []int
	for i := range c.Endpoints {
		if usable(&c.Endpoints[i].Prediction) {
			predicted = append(predicted, i)
		}
	}
	if len(predicted) == 0 {
		return heuristics.CompositeScores(c, p.CompositeParams)
	}
	if c.Request.SLO.Any() {
		if group, strategy, ok := headroomGroup(c, predicted, p); ok {
			rank(group, strategy, p, scores)
			return scores
		}
	}
	// No SLO, or none of its objectives applies: the lowest predicted latency wins.
	group := make([]member, len(predicted))
	for k, i := range predicted {
		pr := &c.Endpoints[i].Prediction
		group[k] = member{idx: i, ttft: pr.TTFTMs, tpot: pr.TPOTMs}
	}
	rank(group, StrategyLeast, p, scores)
	return scores
}

// usable reports whether a prediction is valid and its numbers are finite.
func usable(pr *sdk.Prediction) bool {
	return pr.Valid && !math.IsNaN(pr.TTFTMs) && !math.IsInf(pr.TTFTMs, 0) &&
		!math.IsNaN(pr.TPOTMs) && !math.IsInf(pr.TPOTMs, 0)
}

// headroomGroup picks the endpoints to rank for a request with an SLO and the strategy to rank
// them with: those meeting the SLO (configured strategy); else, among the idle endpoints if any
// (all otherwise), the least severe deficit group, TPOT-only miss, TTFT-only miss, then both
// (always least). Members carry the headroom (meeting) or the deficit max(0, −headroom) (missing)
// per dimension. ok is false when no objective applies to any endpoint (every headroom is +Inf,
// e.g. a TPOT-only SLO on a non-streaming request).
func headroomGroup(c *sdk.Cycle, predicted []int, p *Params) (group []member, strategy string, ok bool) {
	var meets, misses []member
	for _, i := range predicted {
		h, _ := heuristics.HeadroomOf(&c.Request, &c.Endpoints[i], p.SLOBufferFactor)
		if !math.IsInf(h.TTFTMs, 1) || !math.IsInf(h.TPOTMs, 1) {
			ok = true
		}
		if h.Meets() {
			meets = append(meets, member{idx: i, ttft: h.TTFTMs, tpot: h.TPOTMs})
		} else {
			misses = append(misses, member{idx: i, ttft: h.TTFTMs, tpot: h.TPOTMs})
		}
	}
	if !ok {
		return nil, "", false
	}
	if len(meets) > 0 {
		return meets, p.HeadroomSelectionStrategy, true
	}
	var idle []member
	for _, m := range misses {
		if c.Endpoints[m.idx].State.Idle() {
			idle = append(idle, m)
		}
	}
	if len(idle) > 0 {
		misses = idle
	}
	var tpotOnly, ttftOnly, both []member
	for _, m := range misses {
		d := member{idx: m.idx, ttft: max(0, -m.ttft), tpot: max(0, -m.tpot)}
		switch {
		case m.ttft >= 0:
			tpotOnly = append(tpotOnly, d)
		case m.tpot >= 0:
			ttftOnly = append(ttftOnly, d)
		default:
			both = append(both, d)
		}
	}
	for _, g := range [][]member{tpotOnly, ttftOnly} {
		if len(g) > 0 {
			return g, StrategyLeast, true
		}
	}
	return both, StrategyLeast, true
}

// rank scores the group's members: each dimension's distances are min–max normalised, the
// dimensions with spread and a positive weight are combined by weight, and least scores
// 1 − combined, most scores combined, mapped onto [minRankedScore, 1]. A group in which no
// weighted dimension has spread scores 1 throughout. Endpoints outside the group keep their score.
func rank(group []member, strategy string, p *Params, scores []float64) {
	ttft := make([]float64, len(group))
	tpot := make([]float64, len(group))
	for k, m := range group {
		ttft[k], tpot[k] = m.ttft, m.tpot
	}
	nT, wT := normalise(ttft, p.TTFTWeight)
	nP, wP := normalise(tpot, p.TPOTWeight)
	for k, m := range group {
		if wT+wP <= 0 {
			scores[m.idx] = 1
			continue
		}
		combined := (wT*nT[k] + wP*nP[k]) / (wT + wP)
		if strategy == StrategyLeast {
			combined = 1 - combined
		}
		scores[m.idx] = minRankedScore + (1-minRankedScore)*min(1, max(0, combined))
	}
}

// normalise min–max normalises one dimension into [0, 1] and returns it with the weight the
// dimension gets: weight when it has spread, 0 otherwise. +Inf (no objective) is kept out of the
// min and max and normalises to 1, the most headroom; finite values alongside +Inf but without
// spread of their own normalise to 0.
func normalise(vals []float64, weight float64) (n []float64, w float64) {
	n = make([]float64, len(vals))
	lo, hi := math.Inf(1), math.Inf(-1)
	var finite, inf bool
	for _, v := range vals {
		if math.IsInf(v, 1) {
			inf = true
			continue
		}
		finite = true
		lo, hi = min(lo, v), max(hi, v)
	}
	spread := finite && hi-lo > eps
	if !spread && !(finite && inf) {
		return n, 0
	}
	for k, v := range vals {
		switch {
		case math.IsInf(v, 1):
			n[k] = 1
		case spread:
			n[k] = (v - lo) / (hi - lo)
		}
	}
	return n, weight
}
