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
// mapped onto [minRankedScore, 1] (rankedScore). A group in which no weighted dimension has spread
// scores 1 throughout. Endpoints outside the group keep their score.
func rank(group []member, p *Params, scores []float64) {
	dT, dP := newDim(), newDim()
	for _, m := range group {
		dT.add(m.ttft)
		dP.add(m.tpot)
	}
	for _, m := range group {
		scores[m.idx] = rankedScore(&dT, &dP, m.ttft, m.tpot, p)
	}
}

// rankedScore is the score of a member whose values are vT and vP in a group whose dimensions
// are dT and dP.
func rankedScore(dT, dP *dim, vT, vP float64, p *Params) float64 {
	wT, wP := dT.weight(p.TTFTWeight), dP.weight(p.TPOTWeight)
	if wT+wP <= 0 {
		return 1
	}
	combined := (wT*dT.norm(vT) + wP*dP.norm(vP)) / (wT + wP)
	return minRankedScore + (1-minRankedScore)*min(1, max(0, combined))
}

// dim is what min–max normalising one dimension of a group needs of its values: the finite
// values' min and max, and whether finite values, +Inf and −Inf occur.
type dim struct {
	lo, hi                 float64
	finite, posInf, negInf bool
}

// newDim returns the dimension of a group without members.
func newDim() dim { return dim{lo: math.Inf(1), hi: math.Inf(-1)} }

// add adds one member's value.
func (d *dim) add(v float64) {
	switch {
	case math.IsInf(v, 1):
		d.posInf = true
	case math.IsInf(v, -1):
		d.negInf = true
	default:
		d.finite = true
		d.lo, d.hi = min(d.lo, v), max(d.hi, v)
	}
}

// spread reports whether the finite values differ by more than eps.
func (d *dim) spread() bool { return d.finite && d.hi-d.lo > eps }

// weight is the weight the dimension gets: weight when it has spread, or finite values alongside
// an infinite one; 0 otherwise.
func (d *dim) weight(weight float64) float64 {
	if !d.spread() && !(d.finite && (d.posInf || d.negInf)) {
		return 0
	}
	return weight
}

// norm normalises one value of the dimension into [0, 1]. ±Inf (no objective: the most headroom,
// or, ranked least, the least) is kept out of the min and max and normalises to 1 (+Inf) or 0
// (−Inf); finite values alongside an infinite one but without spread of their own normalise to
// the opposite end.
func (d *dim) norm(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return 1
	case math.IsInf(v, -1):
		return 0
	case d.spread():
		return (v - d.lo) / (d.hi - d.lo)
	case d.negInf:
		return 1
	}
	return 0
}
