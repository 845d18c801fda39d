package scorer

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

var _ sdk.RoundScorer = (*Scorer)(nil)

// ScoreAfter returns, per endpoint i of a cycle in a round, the score i would get had one more
// request like c's been placed on it first: score's on a copy of c with only i placed on
// (sdk.PlaceOn(copy, i, 1): its predictions moved to the producer's after-predictions, one more
// request in flight there), the other endpoints as they are. It is exact, and takes one pass over
// the endpoints to gather each group's values and one to score every endpoint against the others'
// (scoreAfter), not one Score per endpoint.
func (s *Scorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if c == nil {
		return nil, errors.New("scoring after a placement: nil cycle")
	}
	if len(scores) != len(c.Endpoints) {
		return nil, fmt.Errorf("scoring after a placement: got %d scores for %d endpoints, want one per endpoint", len(scores), len(c.Endpoints))
	}
	return scoreAfter(c, s.Get()), nil
}

// outlook is what score makes of one endpoint: whether it has a usable prediction, its headroom
// (for a request with an SLO), whether the router has nothing in flight there, and its negated
// predicted latencies.
type outlook struct {
	usable, ok, meets, idle bool
	// miss is the group a missing endpoint falls in: missTPOT, missTTFT or missBoth.
	miss      int
	headroom  [2]float64 // TTFT, TPOT
	latency   [2]float64 // −predicted TTFT, −predicted TPOT
	tpotKnown bool       // predicted TPOT > 0
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
	o.ok = !math.IsInf(h.TTFTMs, 1) || !math.IsInf(h.TPOTMs, 1)
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

// values are the endpoint's values in a group that meets the SLO (its headroom, negated under
// StrategyLeast) or misses it (its negated deficit).
func (o *outlook) values(meets bool, p *Params) [2]float64 {
	v := o.headroom
	for k := range v {
		switch {
		case !meets:
			v[k] = negDeficit(v[k])
		case p.HeadroomSelectionStrategy == StrategyLeast:
			v[k] = -v[k]
		}
	}
	return v
}

// scoreAfter computes ScoreAfter's scores. Every endpoint but i is the same in the cycle and in
// i's placed copy, so each group score can rank is gathered once over the cycle (groups), and
// endpoint i's placed outlook is scored against each group without i's own current values.
func scoreAfter(c *sdk.Cycle, p *Params) []float64 {
	placed := heuristics.PlacedEach(c)
	g := newGroups(c, p)
	var fallback []float64
	out := make([]float64, len(c.Endpoints))
	for i := range c.Endpoints {
		cur, now := g.outlooks[i], outlookOf(&c.Request, &placed.Endpoints[i], p)
		if g.predicted-count(cur.usable)+count(now.usable) == 0 {
			if fallback == nil {
				fallback = heuristics.CompositeScoresAfter(c, placed, p.CompositeParams)
			}
			out[i] = fallback[i]
			continue
		}
		if now.usable {
			out[i] = g.scoreAfter(i, &cur, &now, c.Request.SLO.Any(), p)
		}
	}
	return out
}

// count is 1 for true, 0 for false.
func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// groups gathers, over a cycle, every group score may rank: all predicted endpoints by latency,
// those meeting the SLO, and those missing it by which objective they miss, among the idle ones
// and among all.
type groups struct {
	outlooks              []outlook
	predicted, ok, meetsN int
	idle                  int // predicted and idle
	latency, meets        group
	missIdle, missAll     [3]group
}

// newGroups gathers c's groups.
func newGroups(c *sdk.Cycle, p *Params) *groups {
	g := &groups{outlooks: make([]outlook, len(c.Endpoints)), latency: newGroup(), meets: newGroup()}
	for k := range g.missIdle {
		g.missIdle[k], g.missAll[k] = newGroup(), newGroup()
	}
	for i := range c.Endpoints {
		o := outlookOf(&c.Request, &c.Endpoints[i], p)
		g.outlooks[i] = o
		if !o.usable {
			continue
		}
		g.predicted++
		g.ok += count(o.ok)
		g.idle += count(o.idle)
		g.latency.add(i, &o, o.latency)
		if !c.Request.SLO.Any() {
			continue
		}
		if o.meets {
			g.meetsN++
			g.meets.add(i, &o, o.values(true, p))
			continue
		}
		v := o.values(false, p)
		g.missAll[o.miss].add(i, &o, v)
		if o.idle {
			g.missIdle[o.miss].add(i, &o, v)
		}
	}
	return g
}

// scoreAfter is endpoint i's score with its outlook now instead of cur (whose usable prediction
// it has), following score's steps with the other endpoints as gathered.
func (g *groups) scoreAfter(i int, cur, now *outlook, slo bool, p *Params) float64 {
	other := func(n int, was bool) int { return n - count(cur.usable && was) }
	if !slo || other(g.ok, cur.ok)+count(now.ok) == 0 {
		return g.latency.scoreAfter(i, cur, cur.latency, cur.usable, now, now.latency, false, p)
	}
	if other(g.meetsN, cur.meets)+count(now.meets) > 0 {
		if !now.meets {
			return 0
		}
		return g.meets.scoreAfter(i, cur, cur.values(true, p), cur.usable && cur.meets, now, now.values(true, p), true, p)
	}
	// No endpoint meets the SLO: the idle ones are considered if any, else all.
	considered, idle := &g.missAll, false
	if other(g.idle, cur.idle)+count(now.idle) > 0 {
		considered, idle = &g.missIdle, true
		if !now.idle {
			return 0
		}
	}
	curIn := func(k int) bool { return cur.usable && !cur.meets && cur.miss == k && (!idle || cur.idle) }
	for k := range considered {
		if considered[k].n-count(curIn(k))+count(now.miss == k) == 0 {
			continue
		}
		if now.miss != k {
			return 0
		}
		return considered[k].scoreAfter(i, cur, cur.values(false, p), curIn(k), now, now.values(false, p), true, p)
	}
	return 0 // not reached: now is in one of the groups
}

// group is one group's members' values, so that the group without any one member is at hand.
type group struct {
	n, tpotKnown int
	values       [2]pool // the values the step ranks, TTFT and TPOT
	latency      [2]pool // the negated predicted latencies
}

func newGroup() group {
	return group{values: [2]pool{newPool(), newPool()}, latency: [2]pool{newPool(), newPool()}}
}

// add adds endpoint i, whose outlook is o and values v.
func (g *group) add(i int, o *outlook, v [2]float64) {
	g.n++
	g.tpotKnown += count(o.tpotKnown)
	for k := range v {
		g.values[k].add(i, v[k])
		g.latency[k].add(i, o.latency[k])
	}
}

// scoreAfter is the rank score of endpoint i, whose outlook is now and values v, in the group
// with i's current member (outlook cur, values curV) taken out if curIn. byLatency ranks a
// dimension in which no member has an objective by predicted latency (byLatencyWithoutObjective).
func (g *group) scoreAfter(i int, cur *outlook, curV [2]float64, curIn bool, now *outlook, v [2]float64, byLatency bool, p *Params) float64 {
	var d [2]dim
	for k := range d {
		d[k] = g.values[k].without(i, curV[k], curIn)
		d[k].add(v[k])
	}
	if byLatency {
		n := g.n - count(curIn) + 1
		known := g.tpotKnown - count(curIn && cur.tpotKnown) + count(now.tpotKnown)
		for k, no := range [2]bool{!d[0].finite, !d[1].finite && known == n} {
			if no {
				d[k] = g.latency[k].without(i, cur.latency[k], curIn)
				d[k].add(now.latency[k])
				v[k] = now.latency[k]
			}
		}
	}
	return rankedScore(&d[0], &d[1], v[0], v[1], p)
}

// pool is one dimension's values over a group: the two lowest and two highest finite values,
// which members hold the lowest and the highest, and how many values are finite, +Inf and −Inf.
type pool struct {
	lo, lo2, hi, hi2       float64
	loAt, hiAt             int
	finite, posInf, negInf int
}

func newPool() pool {
	return pool{lo: math.Inf(1), lo2: math.Inf(1), hi: math.Inf(-1), hi2: math.Inf(-1), loAt: -1, hiAt: -1}
}

// add adds member i's value v.
func (p *pool) add(i int, v float64) {
	switch {
	case math.IsInf(v, 1):
		p.posInf++
	case math.IsInf(v, -1):
		p.negInf++
	default:
		p.finite++
		switch {
		case v < p.lo:
			p.lo2, p.lo, p.loAt = p.lo, v, i
		case v < p.lo2:
			p.lo2 = v
		}
		switch {
		case v > p.hi:
			p.hi2, p.hi, p.hiAt = p.hi, v, i
		case v > p.hi2:
			p.hi2 = v
		}
	}
}

// without returns the dimension of the pool's values with member i's value v taken out if member.
func (p *pool) without(i int, v float64, member bool) dim {
	d := dim{lo: p.lo, hi: p.hi}
	finite, posInf, negInf := p.finite, p.posInf, p.negInf
	if member {
		switch {
		case math.IsInf(v, 1):
			posInf--
		case math.IsInf(v, -1):
			negInf--
		default:
			finite--
			if i == p.loAt {
				d.lo = p.lo2
			}
			if i == p.hiAt {
				d.hi = p.hi2
			}
		}
	}
	d.finite, d.posInf, d.negInf = finite > 0, posInf > 0, negInf > 0
	return d
}
