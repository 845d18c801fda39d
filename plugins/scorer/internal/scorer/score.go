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

// member is one endpoint the scorer ranks: its index in the cycle and how good it is in the TTFT
// and TPOT dimensions, higher is better (a headroom, a deficit or a latency with the sign that
// makes it so; ±Inf for a dimension without an objective there).
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
		if group, ok := headroomGroup(c, predicted, p); ok {
			rank(group, p, scores)
			return scores
		}
	}
	// No SLO, or none of its objectives applies: the lowest predicted latency wins.
	group := make([]member, len(predicted))
	for k, i := range predicted {
		pr := &c.Endpoints[i].Prediction
		group[k] = member{idx: i, ttft: -pr.TTFTMs, tpot: -pr.TPOTMs}
	}
	rank(group, p, scores)
	return scores
}

// usable reports whether a prediction is valid and its numbers are finite.
func usable(pr *sdk.Prediction) bool {
	return pr.Valid && !math.IsNaN(pr.TTFTMs) && !math.IsInf(pr.TTFTMs, 0) &&
		!math.IsNaN(pr.TPOTMs) && !math.IsInf(pr.TPOTMs, 0)
}

// headroomGroup picks the endpoints to rank for a request with an SLO and how good each is: those
// meeting the SLO, by headroom (most) or its opposite (least); else, among the idle endpoints if
// any (all otherwise), the least severe deficit group, TPOT-only miss, TTFT-only miss, then both,
// by the opposite of the deficit max(0, −headroom) (always least). A dimension in which no member
// has an objective is ranked by predicted latency instead, the lowest best: a request with only a
// TPOT objective still wants its first token soon. ok is false when no objective applies to any
// endpoint (every headroom is +Inf, e.g. a TPOT-only SLO on a non-streaming request).
func headroomGroup(c *sdk.Cycle, predicted []int, p *Params) (group []member, ok bool) {
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
		return nil, false
	}
	if len(meets) > 0 {
		if p.HeadroomSelectionStrategy == StrategyLeast {
			for k := range meets {
				meets[k].ttft, meets[k].tpot = -meets[k].ttft, -meets[k].tpot
			}
		}
		return byLatencyWithoutObjective(c, meets), true
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
		d := member{idx: m.idx, ttft: negDeficit(m.ttft), tpot: negDeficit(m.tpot)}
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
			return byLatencyWithoutObjective(c, g), true
		}
	}
	return byLatencyWithoutObjective(c, both), true
}

// negDeficit is −max(0, −headroom), a headroom of +Inf (no objective) kept as it is.
func negDeficit(headroom float64) float64 {
	if math.IsInf(headroom, 1) {
		return headroom
	}
	return min(0, headroom)
}

// byLatencyWithoutObjective replaces, in a dimension where no member of g has an objective (every
// value ±Inf), the members' values by their negated predicted latency. TPOT only when every
// member's is known (not 0, the producer's "unknown", which would pass for the fastest).
func byLatencyWithoutObjective(c *sdk.Cycle, g []member) []member {
	noTTFT, noTPOT := true, true
	for _, m := range g {
		noTTFT = noTTFT && math.IsInf(m.ttft, 0)
		noTPOT = noTPOT && math.IsInf(m.tpot, 0) && c.Endpoints[m.idx].Prediction.TPOTMs > 0
	}
	for k := range g {
		pr := &c.Endpoints[g[k].idx].Prediction
		if noTTFT {
			g[k].ttft = -pr.TTFTMs
		}
		if noTPOT {
			g[k].tpot = -pr.TPOTMs
		}
	}
	return g
}

// rank scores the group's members: each dimension's values are min–max normalised, the
// dimensions with spread and a positive weight are combined by weight, and the combination is
// mapped onto [minRankedScore, 1]. A group in which no weighted dimension has spread scores 1
// throughout. Endpoints outside the group keep their score.
func rank(group []member, p *Params, scores []float64) {
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
		scores[m.idx] = minRankedScore + (1-minRankedScore)*min(1, max(0, combined))
	}
}

// normalise min–max normalises one dimension into [0, 1] and returns it with the weight the
// dimension gets: weight when it has spread, 0 otherwise. ±Inf (no objective: the most headroom,
// or, ranked least, the least) is kept out of the min and max and normalises to 1 (+Inf) or 0
// (−Inf); finite values alongside an infinite one but without spread of their own normalise to
// the opposite end.
func normalise(vals []float64, weight float64) (n []float64, w float64) {
	n = make([]float64, len(vals))
	lo, hi := math.Inf(1), math.Inf(-1)
	var finite, posInf, negInf bool
	for _, v := range vals {
		switch {
		case math.IsInf(v, 1):
			posInf = true
		case math.IsInf(v, -1):
			negInf = true
		default:
			finite = true
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	spread := finite && hi-lo > eps
	if !spread && !(finite && (posInf || negInf)) {
		return n, 0
	}
	for k, v := range vals {
		switch {
		case math.IsInf(v, 1):
			n[k] = 1
		case math.IsInf(v, -1):
			n[k] = 0
		case spread:
			n[k] = (v - lo) / (hi - lo)
		case negInf:
			n[k] = 1
		}
	}
	return n, weight
}
