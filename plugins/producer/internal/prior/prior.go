// Package prior is the producer's analytical latency model: TTFT and TPOT as non-negative linear
// combinations of terms that carry an engine's physics (basis.go), fitted online from the first
// samples, times a speed factor per endpoint. It predicts from a few dozen samples, before any
// tree model exists, and, being linear in the load, it keeps scaling where the load goes beyond
// anything sampled, where trees go flat. The producer's trees learn the ratio of the actual
// latency to this prior, so they correct its shape without having to carry its scale.
package prior

import (
	"errors"
	"fmt"
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Params configure the prior.
type Params struct {
	// HalfLife is how many samples it takes for a sample's weight in the fit to halve.
	HalfLife int `json:"halfLife"`
	// MinSamples is how many samples of a target the fit needs before it predicts, and how many
	// samples must excite a term (make it non-zero) before it extrapolates beyond the largest
	// value they showed.
	MinSamples int `json:"minSamples"`
	// EndpointWindow is how many recent samples of an endpoint its speed factor averages.
	EndpointWindow int `json:"endpointWindow"`
	// EndpointShrink pulls an endpoint's speed factor toward the fleet's (1) as if it had this
	// many samples at the fleet's speed, so one slow request does not brand an endpoint slow.
	EndpointShrink float64 `json:"endpointShrink"`
}

// DefaultParams: a half-life of 2,000 samples (minutes of traffic on a busy fleet, long enough
// to average over load swings, short enough to follow a changed engine), predictions from 16
// samples (enough for 7 coefficients, most of which the data leaves at 0 at first), speed factors
// over about an endpoint's last 100 samples, shrunk by 8.
func DefaultParams() Params {
	return Params{HalfLife: 2000, MinSamples: 16, EndpointWindow: 100, EndpointShrink: 8}
}

// Validate checks every parameter's range.
func (p *Params) Validate() error {
	return errors.Join(
		sdk.CheckRange("halfLife", float64(p.HalfLife), 10, 1e7),
		sdk.CheckRange("minSamples", float64(p.MinSamples), 1, 1e6),
		sdk.CheckRange("endpointWindow", float64(p.EndpointWindow), 1, 1e6),
		sdk.CheckRange("endpointShrink", p.EndpointShrink, 0, 1e6),
	)
}

// maxLogRatio bounds one sample's log(actual / prior) in a speed factor: a request 20× slower or
// faster than the fleet's model says is an outlier (a hiccup, a preemption), not a speed.
var maxLogRatio = math.Log(20)

// Prior is the online fit. It is not safe for concurrent use: the producer serialises Add and
// Snapshot, and Produce reads only Snapshots, which are immutable.
type Prior struct {
	params Params
	fits   [2]*fit // TTFT, TPOT
	n      [2]int  // samples each fit has learned from
	speed  map[string]*speed
	kinds  map[string]string // endpoint → its kind (SetKind), for those that have one
	snap   *Snapshot
	row    [maxTerms]float64
}

// The targets, as indices of every per-target array here and in the producer.
const (
	TTFT = iota
	TPOT
)

// fillRow writes target k's terms of r on endpoint id in state st into dst. A direct call, not
// one through a table of functions: through one, dst would escape and every Predict would
// allocate its row.
func fillRow(k int, dst []float64, r *sdk.Request, id string, st *sdk.EndpointState) {
	if k == TTFT {
		ttftRow(dst, r, id, st)
	} else {
		tpotRow(dst, r, st)
	}
}

// speed is one endpoint's running mean of log(actual / fleet model) over N samples, per target.
type speed struct {
	Log [2]float64 `json:"log"`
	N   [2]float64 `json:"n"`
}

// New returns an empty prior; params must be valid.
func New(params Params) *Prior {
	decay := math.Exp(-math.Ln2 / float64(params.HalfLife))
	support := float64(params.MinSamples)
	return &Prior{params: params, fits: [2]*fit{newFit(len(TTFTTerms), decay, support), newFit(len(TPOTTerms), decay, support)},
		speed: map[string]*speed{}, kinds: map[string]string{}, snap: &Snapshot{}}
}

// SetKind records the kind of an endpoint (its hardware, from a label): an endpoint's speed
// factor is pulled toward its kind's instead of the fleet's, and an endpoint not seen yet starts
// from its kind's. "" forgets the endpoint's kind.
func (p *Prior) SetKind(endpoint, kind string) {
	if kind == "" {
		delete(p.kinds, endpoint)
		return
	}
	p.kinds[endpoint] = kind
}

// Add learns from one finished request; ttft or tpot ≤ 0 means the sample has no such target.
// The fleet model learns every endpoint's latencies; an endpoint's speed factor learns how far
// its latencies are from that model (a mixed fleet's fast and slow servers), measured against
// the last published model. The fleet model does not learn from the factors: fitting each to
// the other drifts while both are young.
func (p *Prior) Add(s *sdk.Sample, ttft, tpot float64) {
	sp := p.speed[s.EndpointID]
	if sp == nil {
		sp = &speed{}
		p.speed[s.EndpointID] = sp
	}
	for k, y := range [2]float64{ttft, tpot} {
		if !(y > 0) {
			continue
		}
		f := p.fits[k]
		x := p.row[:f.k]
		fillRow(k, x, &s.Request, s.EndpointID, &s.State)
		if p.snap.Learned(k) {
			if g := predict(p.snap.Coef[k], x, p.snap.limit[k]); g > 0 {
				sp.N[k] = min(sp.N[k]+1, float64(p.params.EndpointWindow))
				sp.Log[k] += (clampLog(math.Log(y/g)) - sp.Log[k]) / sp.N[k]
			}
		}
		f.add(x, y)
		p.n[k]++
	}
}

func clampLog(v float64) float64 { return min(max(v, -maxLogRatio), maxLogRatio) }

// factors are the endpoint's TTFT and TPOT speed factors: exp of each mean log ratio, shrunk
// by EndpointShrink pseudo-samples toward the log factor of the endpoint's kind (0, the fleet's,
// without one).
func (p *Prior) factors(sp *speed, kind [2]float64) [2]float64 {
	var f [2]float64
	for k := range f {
		f[k] = math.Exp((sp.Log[k]*sp.N[k] + p.params.EndpointShrink*kind[k]) / (sp.N[k] + p.params.EndpointShrink))
	}
	return f
}

// kindLogs are each kind's log speed factors: the mean log ratio of its endpoints' samples, shrunk
// toward the fleet's (0) by EndpointShrink pseudo-samples, so a kind seen on a few samples is
// barely told from the fleet.
func (p *Prior) kindLogs() map[string][2]float64 {
	if len(p.kinds) == 0 {
		return nil
	}
	var sum, n = map[string][2]float64{}, map[string][2]float64{}
	for id, kind := range p.kinds {
		sp := p.speed[id]
		if sp == nil {
			continue
		}
		s, c := sum[kind], n[kind]
		for k := range s {
			s[k] += sp.Log[k] * sp.N[k]
			c[k] += sp.N[k]
		}
		sum[kind], n[kind] = s, c
	}
	out := make(map[string][2]float64, len(sum))
	for kind, s := range sum {
		c := n[kind]
		out[kind] = [2]float64{s[0] / (c[0] + p.params.EndpointShrink), s[1] / (c[1] + p.params.EndpointShrink)}
	}
	return out
}

// Refresh solves the fits and publishes what Add learned since the last Refresh as a new
// Snapshot. The producer calls it once per batch of samples.
func (p *Prior) Refresh() *Snapshot {
	s := &Snapshot{speed: make(map[string][2]float64, len(p.speed))}
	for k, f := range p.fits {
		s.Coef[k], s.limit[k], s.learned[k] = f.solve(), f.limits(), p.n[k] >= p.params.MinSamples
	}
	kinds := p.kindLogs()
	for id, sp := range p.speed {
		s.speed[id] = p.factors(sp, kinds[p.kinds[id]])
	}
	if len(kinds) > 0 {
		s.kind = make(map[string][2]float64, len(kinds))
		for kind, l := range kinds {
			s.kind[kind] = [2]float64{math.Exp(l[0]), math.Exp(l[1])}
		}
	}
	p.snap = s
	return s
}

// Snapshot returns the last published snapshot (empty, never ready, before the first Refresh;
// nil, never ready either, for a nil Prior: the prior off).
func (p *Prior) Snapshot() *Snapshot {
	if p == nil {
		return nil
	}
	return p.snap
}

// Snapshot is an immutable state of the prior, safe for concurrent use.
type Snapshot struct {
	// Coef holds each target's fleet model coefficients, in the order of TTFTTerms and TPOTTerms.
	Coef    [2][]float64
	limit   [2][]float64 // the most each term counts (fit.limits)
	learned [2]bool      // whether the target has had MinSamples samples
	speed   map[string][2]float64
	kind    map[string][2]float64 // each kind's speed factors, for endpoints not seen yet
}

// Learned reports whether target k (TTFT or TPOT) predicts: it has had MinSamples samples. A
// producer learns TTFT at first tokens and TPOT only when answers finish, so TTFT comes first.
func (s *Snapshot) Learned(k int) bool { return s != nil && s.learned[k] }

// Ready reports whether both targets predict: the prior can be the base residual trees learn from.
func (s *Snapshot) Ready() bool { return s.Learned(TTFT) && s.Learned(TPOT) }

// Speed returns the endpoint's TTFT and TPOT speed factors: its own for an endpoint seen, else
// those of its kind (kind "" for none), else 1, 1 (and for a nil Snapshot).
func (s *Snapshot) Speed(endpoint, kind string) [2]float64 {
	if s == nil {
		return [2]float64{1, 1}
	}
	if f, ok := s.speed[endpoint]; ok {
		return f
	}
	if f, ok := s.kind[kind]; ok && kind != "" {
		return f
	}
	return [2]float64{1, 1}
}

// Predict returns the prior's TTFT and TPOT of r on endpoint (of kind, "" for none) in state st,
// in ms, each 0 when that target has not been learned.
func (s *Snapshot) Predict(r *sdk.Request, endpoint, kind string, st *sdk.EndpointState) (ttft, tpot float64) {
	var out [2]float64
	var row [maxTerms]float64
	speed := s.Speed(endpoint, kind)
	for k := range out {
		if s.Learned(k) {
			fillRow(k, row[:], r, endpoint, st)
			out[k] = positive(predict(s.Coef[k], row[:], s.limit[k]) * speed[k])
		}
	}
	return out[TTFT], out[TPOT]
}

// PrefillMs is the prior's time to compute r's uncached prompt on endpoint (of kind) in state st:
// its TTFT term in the uncached tokens alone (their coefficient times them, times the endpoint's
// TTFT speed factor), what the prompt's prefill takes of the engine; 0 before TTFT is learned.
func (s *Snapshot) PrefillMs(r *sdk.Request, endpoint, kind string, st *sdk.EndpointState) float64 {
	if !s.Learned(TTFT) {
		return 0
	}
	var row [maxTerms]float64
	ttftRow(row[:], r, endpoint, st)
	return s.Coef[TTFT][1] * row[1] * s.Speed(endpoint, kind)[TTFT]
}

// positive is v, or the smallest positive number when a fit extrapolates to v ≤ 0 (or NaN): a
// ready target's prediction is never 0, which means "not ready".
func positive(v float64) float64 {
	if v > 0 {
		return v
	}
	return math.SmallestNonzeroFloat64
}

// String describes the coefficients, for logs.
func (s *Snapshot) String() string {
	return fmt.Sprintf("ttft %v (learned %v), tpot %v (learned %v), %d endpoints, %d kinds", s.Coef[TTFT], s.learned[TTFT], s.Coef[TPOT], s.learned[TPOT], len(s.speed), len(s.kind))
}
