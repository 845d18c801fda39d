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

// score is the whole algorithm for one cycle; every step is explained in README.md.
func score(c *sdk.Cycle, p *Params) []float64 {
	if attains(c, p) {
		return attainScores(c, p)
	}
	f, outlooks := frameOf(c, p)
	if f == nil {
		return heuristics.CompositeScores(c, p.CompositeParams)
	}
	scores := make([]float64, len(c.Endpoints))
	for i := range outlooks {
		if f.holds(&outlooks[i]) {
			scores[i] = f.rank(&outlooks[i], p)
		}
	}
	return scores
}

// usable reports whether a prediction is valid and its numbers are finite.
func usable(pr *sdk.Prediction) bool {
	return pr.Valid && !math.IsNaN(pr.TTFTMs) && !math.IsInf(pr.TTFTMs, 0) &&
		!math.IsNaN(pr.TPOTMs) && !math.IsInf(pr.TPOTMs, 0)
}

// outlook is what score makes of one endpoint for the request: whether it has a usable
// prediction, whether the router has nothing in flight there, its headroom (for a request with an
// SLO) and its negated predicted latencies.
type outlook struct {
	usable, idle bool
	// objective is whether some objective applies (a finite headroom); meets whether both
	// headrooms are ≥ 0, and miss, for an endpoint that does not meet, the group it falls in.
	objective, meets bool
	miss             int
	headroom         [2]float64 // TTFT, TPOT
	latency          [2]float64 // −predicted TTFT, −predicted TPOT
	tpotKnown        bool       // predicted TPOT > 0
}

// The groups of endpoints that miss the SLO, in the order score prefers them.
const (
	missTPOT = iota // only TPOT missed
	missTTFT        // only TTFT missed
	missBoth
)

// outlookOf is score's view of endpoint e for request r.
func outlookOf(r *sdk.Request, e *sdk.Endpoint, p *Params) outlook {
	o := outlook{usable: usable(&e.Prediction), idle: e.State.Idle(),
		latency: [2]float64{-e.Prediction.TTFTMs, -e.Prediction.TPOTMs}, tpotKnown: e.Prediction.TPOTMs > 0}
	if !o.usable || !r.SLO.Any() {
		return o
	}
	h, _ := heuristics.HeadroomOf(r, e, p.SLOBufferFactor)
	o.headroom = [2]float64{h.TTFTMs, h.TPOTMs}
	o.objective = !math.IsInf(h.TTFTMs, 1) || !math.IsInf(h.TPOTMs, 1)
	o.meets = h.Meets()
	switch {
	case h.TTFTMs >= 0:
		o.miss = missTPOT
	case h.TPOTMs >= 0:
		o.miss = missTTFT
	default:
		o.miss = missBoth
	}
	return o
}

// The tiers score may rank.
const (
	tierLatency = iota // no SLO, or none of its objectives applies: by predicted latency
	tierMeets          // the endpoints meeting the SLO, by headroom
	tierMiss           // one group of the endpoints missing it, by deficit
)

// frame is what score computes over a cycle's candidates: the group of endpoints it ranks (the
// tier, and for tierMiss which group and whether among the idle endpoints only), how it values
// them, and each dimension's bounds over the group. ScoreAfter holds it while one endpoint moves.
type frame struct {
	tier, miss int
	idleOnly   bool
	// byLatency is, per dimension, whether no member has an objective there, so the dimension
	// is ranked by predicted latency instead (TPOT only when every member's is known).
	byLatency [2]bool
	dims      [2]dim
}

// frameOf returns c's frame and every endpoint's outlook; a nil frame when no endpoint has a
// usable prediction (the composite fallback). It picks the group as README.md's steps 3 to 6
// say: with an SLO, those meeting it, by headroom (most) or its opposite (least); else, among
// the idle endpoints if any (all otherwise), the least severe deficit group, TPOT-only miss,
// TTFT-only miss, then both, by the opposite of the deficit max(0, −headroom) (always least).
func frameOf(c *sdk.Cycle, p *Params) (*frame, []outlook) {
	outlooks := make([]outlook, len(c.Endpoints))
	var predicted, meets, idleMisses int
	var misses, idle [3]int
	objective := false
	for i := range c.Endpoints {
		o := outlookOf(&c.Request, &c.Endpoints[i], p)
		outlooks[i] = o
		if !o.usable {
			continue
		}
		predicted++
		objective = objective || o.objective
		switch {
		case o.meets:
			meets++
		case o.idle:
			idle[o.miss]++
			idleMisses++
			fallthrough
		default:
			misses[o.miss]++
		}
	}
	if predicted == 0 {
		return nil, outlooks
	}
	f := &frame{dims: [2]dim{newDim(), newDim()}}
	switch {
	case !c.Request.SLO.Any() || !objective:
		f.tier = tierLatency
	case meets > 0:
		f.tier = tierMeets
	default:
		f.tier = tierMiss
		if idleMisses > 0 {
			f.idleOnly, misses = true, idle
		}
		for misses[f.miss] == 0 {
			f.miss++
		}
	}
	if f.tier != tierLatency {
		f.byLatency = [2]bool{true, true}
		for i := range outlooks {
			if o := &outlooks[i]; f.holds(o) {
				f.byLatency[0] = f.byLatency[0] && math.IsInf(o.headroom[0], 0)
				f.byLatency[1] = f.byLatency[1] && math.IsInf(o.headroom[1], 0) && o.tpotKnown
			}
		}
	}
	for i := range outlooks {
		if o := &outlooks[i]; f.holds(o) {
			v := f.values(o, p)
			f.dims[0].add(v[0])
			f.dims[1].add(v[1])
		}
	}
	return f, outlooks
}

// holds reports whether an endpoint whose outlook is o belongs to the frame's group.
func (f *frame) holds(o *outlook) bool {
	switch {
	case !o.usable:
		return false
	case f.tier == tierLatency:
		return true
	case f.tier == tierMeets:
		return o.meets
	}
	return !o.meets && o.miss == f.miss && (o.idle || !f.idleOnly)
}

// values is how good an endpoint whose outlook is o is in the frame, per dimension, higher is
// better: its negated latency (tierLatency, or a dimension ranked by latency), its headroom
// (negated under StrategyLeast) or its negated deficit; ±Inf for a dimension without an
// objective on that endpoint.
func (f *frame) values(o *outlook, p *Params) [2]float64 {
	if f.tier == tierLatency {
		return o.latency
	}
	v := o.headroom
	for k := range v {
		switch {
		case f.byLatency[k]:
			v[k] = o.latency[k]
		case f.tier == tierMiss:
			v[k] = negDeficit(v[k])
		case p.HeadroomSelectionStrategy == StrategyLeast:
			v[k] = -v[k]
		}
	}
	return v
}

// negDeficit is −max(0, −headroom), a headroom of +Inf (no objective) kept as it is.
func negDeficit(headroom float64) float64 {
	if math.IsInf(headroom, 1) {
		return headroom
	}
	return min(0, headroom)
}

// rank is the score of an endpoint whose outlook is o against the frame's bounds: each
// dimension's value is min–max normalised (dim.norm), the dimensions with spread and a positive
// weight are combined by weight, and the combination is mapped onto [minRankedScore, 1] for the
// group's members. A group in which no weighted dimension has spread scores 1 throughout. A value
// outside the bounds (ScoreAfter's placed endpoint) maps outside that range: nothing is clamped.
func (f *frame) rank(o *outlook, p *Params) float64 {
	v := f.values(o, p)
	dT, dP := &f.dims[0], &f.dims[1]
	wT, wP := dT.weight(p.TTFTWeight), dP.weight(p.TPOTWeight)
	if wT+wP <= 0 {
		// Every member scores 1; after a placement the scale is one placement (dim.unit).
		if wT, wP = dT.unitWeight(p.TTFTWeight), dP.unitWeight(p.TPOTWeight); wT+wP <= 0 {
			return 1
		}
	}
	combined := (wT*dT.norm(v[0]) + wP*dP.norm(v[1])) / (wT + wP)
	return minRankedScore + (1-minRankedScore)*combined
}

// dim is what min–max normalising one dimension of a group needs of its values: the finite
// values' min and max, whether finite values, +Inf and −Inf occur, and, for a dimension without
// spread, the scale of one placement (ScoreAfter sets it; 0 otherwise).
type dim struct {
	lo, hi                 float64
	finite, posInf, negInf bool
	unit                   float64
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

// unitWeight is the weight the dimension gets in a group where no dimension has a weight:
// weight when it has finite values and a placement scale, 0 otherwise.
func (d *dim) unitWeight(weight float64) float64 {
	if !d.finite || d.unit <= 0 {
		return 0
	}
	return weight
}

// norm normalises one value of the dimension; a member's falls in [0, 1]. ±Inf (no objective:
// the most headroom, or, ranked least, the least) is kept out of the min and max and normalises
// to 1 (+Inf) or 0 (−Inf). Finite values without spread normalise to the top (1), or, alongside
// +Inf alone, to the opposite end (0), and move from there by their distance below the finite
// values' max in units of d.unit when it is set.
func (d *dim) norm(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return 1
	case math.IsInf(v, -1):
		return 0
	case d.spread():
		return (v - d.lo) / (d.hi - d.lo)
	}
	top := 1.0
	if d.posInf && !d.negInf {
		top = 0
	}
	if d.unit > 0 && d.finite {
		return top + (v-d.hi)/d.unit
	}
	return top
}
