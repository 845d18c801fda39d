// Package predictor implements the predicted-latency-producer: for every cycle it predicts the TTFT
// and TPOT the request would see on each endpoint with gradient-boosted trees, and it learns those
// trees online from the samples the host observes (see README.md).
package predictor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/plugins/internal/profiled"
	"github.com/foresight-router/foresight/plugins/internal/quality"
	"github.com/foresight-router/foresight/plugins/producer/internal/features"
	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/producer/internal/prior"
	"github.com/foresight-router/foresight/plugins/producer/internal/store"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Type is the plugin type, as declared in a pipeline config.
const Type = "predicted-latency-producer"

// minPredictionMs is the floor of a prediction: trees extrapolate flat, but a mean model can
// still dip below zero at the edges of its data, and no latency is negative.
const minPredictionMs = 0.001

// Producer is the predicted-latency producer. Produce reads only an atomically swapped model
// set and never waits for Observe or training; Observe and Configure are serialised.
type Producer struct {
	serving atomic.Pointer[serving] // what Produce uses
	lastNow atomic.Int64            // the latest cycle time seen, in Unix ns

	mu         sync.Mutex // guards everything below
	params     Params
	store      *store.Store
	q          [2]*quality.Window // per target (prior.TTFT, prior.TPOT): the predictions served
	prior      *prior.Prior       // nil with the prior off
	priorQ     [2]*quality.Window // the prior alone, scored on every sample before it learns from it
	tripAt     [2]float64         // per target, the threshold in force when its drift guard went on
	training   bool
	lastTrain  time.Time
	last       Training
	share      *sharing  // nil when not sharing (no shareDir, no shareNATS)
	exchanging bool      // an exchange with the other replicas runs
	trained    sync.Cond // signalled when a background training or exchange ends (for Close and tests)
	spread     *spreads  // the predictions' spreads, learned from every sample
	kinds      sync.Map  // endpoint ID → its kind (the SpeedLabel label's value), as Produce last saw it
}

// serving is what Produce reads: the models in service (nil before the first), per target
// whether the drift guard holds its trees back, the prior's latest state (nil with the prior off)
// and per target whether the prior alone is good enough to serve while the guard is on. It is the
// only record of each.
type serving struct {
	set          *model.Set
	drift        [2]bool
	prior        *prior.Snapshot
	priorTrusted [2]bool
	cold         *profiled.Model // the cold-start profiles; nil without
	spreads      *spreadTable    // the predictions' spreads per endpoint; nil before the first samples
	speedLabel   string          // Params.SpeedLabel
	after        string          // Params.After
}

// publish makes a copy of what serves, changed by edit, the serving state; the caller holds mu.
func (p *Producer) publish(edit func(*serving)) {
	next := p.current()
	edit(&next)
	p.serving.Store(&next)
}

// current returns what serves now.
func (p *Producer) current() serving {
	if s := p.serving.Load(); s != nil {
		return *s
	}
	return serving{}
}

var _ sdk.Producer = (*Producer)(nil)

// Features returns the TTFT and TPOT models' feature names in column order: what a model placed
// in modelDir must be trained on.
func Features() (ttft, tpot []string) {
	return slices.Clone(features.TTFT), slices.Clone(features.TPOT)
}

// New returns a producer with DefaultParams and no model.
func New() *Producer {
	p := &Producer{spread: newSpreads()}
	p.trained.L = &p.mu
	p.apply(DefaultParams())
	return p
}

// Type returns "predicted-latency-producer".
func (p *Producer) Type() string { return Type }

// Description says in one line what the producer does.
func (p *Producer) Description() string {
	return "predicts TTFT and TPOT per endpoint with gradient-boosted trees learned online from observed latencies"
}

// Reads declares the cycle fields the producer reads: the request, the endpoints' IDs (the
// prior's speed factors are per endpoint), their labels (the speedLabel label names an
// endpoint's kind) and every state column.
func (p *Producer) Reads() []string {
	return []string{"request", "endpoints.ids", "endpoints.labels", "endpoints.states"}
}

// Params returns a copy of the parameters in force.
func (p *Producer) Params() Params {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.params
}

// putInService makes s the model set Produce uses; the caller holds mu. The quality windows
// keep rolling across retrainings (they describe the recent predictions, whichever model made
// them); they start afresh only when the drift guard clears or a model is loaded from disk.
func (p *Producer) putInService(set *model.Set) {
	p.publish(func(s *serving) { s.set = set })
}

// resetQuality empties the quality windows of the targets; the caller holds mu.
func (p *Producer) resetQuality(targets ...int) {
	for _, k := range targets {
		p.q[k].Reset()
	}
}

// Produce predicts every endpoint's TTFT and TPOT for c, each target from its source (see
// sources): trees (times the prior for residual trees) or the prior alone. Without a TTFT source
// every prediction is invalid, which every stage handles; without a TPOT source TPOT is 0,
// unknown. For a cycle in a round, or one that weighs a placement (weighsPlacement), it also
// predicts, in the same batch, what the request would see on each endpoint after one more request
// like it (TTFTAfterMs, TPOTAfterMs; see withPlaced); under AfterPrior, with the prior, the
// prior there (its TPOT bounded by boundPrefillRise) times the trees' factor on the endpoint as it
// is. Each prediction carries the spread of the recent predictions on its endpoint (spread.go).
func (p *Producer) Produce(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
	if c == nil {
		return nil, errors.New("producing: nil cycle")
	}
	p.seen(c.Now)
	out := make([]sdk.Prediction, len(c.Endpoints))
	s := p.serving.Load()
	if s != nil && s.speedLabel != "" {
		p.recordKinds(c.Endpoints, s.speedLabel)
	}
	src := s.sources()
	if src[prior.TTFT] == fromNone {
		return out, nil
	}
	eps := c.Endpoints
	if c.InRound() || weighsPlacement(c) {
		eps = withPlaced(c)
	}
	n, nt, np := len(eps), len(features.TTFT), len(features.TPOT)
	buf := make([]float64, n*(nt+np+4))
	rows := [2][]float64{buf[:n*nt], buf[n*nt : n*(nt+np)]}
	factor := [2][]float64{buf[n*(nt+np) : n*(nt+np+1)], buf[n*(nt+np+1) : n*(nt+np+2)]}
	base := [2][]float64{buf[n*(nt+np+2) : n*(nt+np+3)], buf[n*(nt+np+3):]}
	var withPrior [2]bool
	for k := range src {
		withPrior[k] = src[k] == fromPrior || src[k] == fromTrees && s.set.Meta.Residual
		for i := range n {
			base[k][i], factor[k][i] = 1, 1
		}
	}
	if src[prior.TTFT] == fromProfile || src[prior.TPOT] == fromProfile {
		for i := range eps {
			pt, pp := s.cold.Predict(&c.Request, &eps[i].State)
			for k, v := range [2]float64{pt, pp} {
				if src[k] == fromProfile {
					base[k][i] = v
				}
			}
		}
	}
	if withPrior[prior.TTFT] || withPrior[prior.TPOT] {
		for i := range eps {
			e := &eps[i]
			pt, pp := s.prior.Predict(&c.Request, e.ID, s.kindOf(e), &e.State)
			if withPrior[prior.TTFT] {
				base[prior.TTFT][i] = pt
			}
			if withPrior[prior.TPOT] {
				base[prior.TPOT][i] = pp
			}
		}
	}
	placed := len(eps) > len(out)           // eps[len(out)+i] is endpoint i with one more request
	held := placed && s.after == AfterPrior // the placed half keeps each endpoint's trees' factor
	if held && withPrior[prior.TPOT] {
		boundPrefillRise(&c.Request, eps, base[prior.TPOT], s)
	}
	for k, width := range [2]int{nt, np} {
		if src[k] != fromTrees {
			continue
		}
		m := [2]*model.Model{s.set.TTFT, s.set.TPOT}[k]
		fill := [2]filler{features.FillTTFT, features.FillTPOT}[k]
		rowsN := n
		if held && withPrior[k] {
			rowsN = len(out)
		}
		for i := range rowsN {
			fill(rows[k][i*width:(i+1)*width], &c.Request, eps[i].ID, &eps[i].State)
		}
		if err := m.PredictRows(rows[k][:rowsN*width], rowsN, factor[k][:rowsN]); err != nil {
			return nil, fmt.Errorf("%s model: %w", targetName[k], err)
		}
		copy(factor[k][rowsN:], factor[k][:n-rowsN])
	}
	predicted := func(k, i int) float64 { return floor(base[k][i] * factor[k][i]) }
	for i := range out {
		out[i] = sdk.Prediction{Valid: true, TTFTMs: predicted(prior.TTFT, i)}
		spread := s.spreads.of(eps[i].ID)
		out[i].TTFTSpread = spread[prior.TTFT]
		if placed {
			out[i].TTFTAfterMs = predicted(prior.TTFT, len(out)+i)
		}
		if src[prior.TPOT] == fromNone { // none: TPOT unknown, 0
			continue
		}
		out[i].TPOTMs = predicted(prior.TPOT, i)
		out[i].TPOTSpread = spread[prior.TPOT]
		if placed {
			out[i].TPOTAfterMs = predicted(prior.TPOT, len(out)+i)
		}
	}
	asClientSees(c, out)
	return out, nil
}

func floor(ms float64) float64 {
	if math.IsNaN(ms) {
		return minPredictionMs
	}
	return max(ms, minPredictionMs)
}

// seen advances the producer's clock to t if t is later.
func (p *Producer) seen(t time.Time) {
	ns := t.UnixNano()
	for {
		cur := p.lastNow.Load()
		if ns <= cur || p.lastNow.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// Observe takes finished-request samples: it scores the predictions they carry, files the
// samples for training and, when the retrain interval has passed and enough new samples arrived,
// trains new models (in the background unless TrainInline). A sample is accepted when it has a
// target to learn: a TTFT from a streamed response or a prefill hop, or a TPOT over at least two
// output tokens. A prefill hop's prediction is first made the endpoint's own (ownShare).
func (p *Producer) Observe(_ context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	accepted := 0
	for i := range samples {
		s := &samples[i]
		ownShare(s)
		p.seen(s.DispatchedAt)
		hasTTFT, hasTPOT := ttftTarget(s) > 0, tpotTarget(s) > 0
		if !hasTTFT && !hasTPOT {
			continue
		}
		accepted++
		if s.Predicted.Valid {
			if hasTTFT {
				p.q[prior.TTFT].Add(s.Predicted.TTFTMs, s.ActualTTFTMs)
			}
			if hasTPOT && s.Predicted.TPOTMs > 0 {
				p.q[prior.TPOT].Add(s.Predicted.TPOTMs, s.ActualTPOTMs)
			}
		}
		p.spread.add(s, ttftTarget(s), tpotTarget(s))
		p.store.Add(*s)
		p.learnPrior(s)
		if p.share != nil {
			p.share.add(*s)
		}
	}
	if p.prior != nil {
		p.kinds.Range(func(id, kind any) bool {
			p.prior.SetKind(id.(string), kind.(string))
			return true
		})
	}
	p.refreshPrior()
	table := p.spread.snapshot()
	p.publish(func(s *serving) { s.spreads = table })
	p.checkDrift()
	p.maybeExchange(false)
	p.maybeTrain()
	return sdk.ObserveResult{Accepted: accepted, Stats: p.stats()}, nil
}

// ttftTarget is the sample's TTFT to learn, 0 if it has none: a non-streamed response arrives
// whole, so its first token's time is not observed, but for a prefill hop's, which is its first
// token.
func ttftTarget(s *sdk.Sample) float64 {
	if !s.Request.Streaming && !prefillHop(s) || !(s.ActualTTFTMs > 0) || math.IsInf(s.ActualTTFTMs, 0) {
		return 0
	}
	return s.ActualTTFTMs
}

// tpotTarget is the sample's TPOT to learn, 0 if it has none (fewer than two output tokens, a
// prefill hop's one).
func tpotTarget(s *sdk.Sample) float64 {
	if !s.Request.Streaming || prefillHop(s) || s.OutputTokens < 2 || !(s.ActualTPOTMs > 0) || math.IsInf(s.ActualTPOTMs, 0) {
		return 0
	}
	return s.ActualTPOTMs
}

// stats reports the model in service and the rolling error; the caller holds mu.
func (p *Producer) stats() *sdk.PredictorStats {
	q := p.params.Objective == ObjectiveQuantile
	cur := p.current()
	s := &sdk.PredictorStats{TTFT: p.q[prior.TTFT].Stats(q), TPOT: p.q[prior.TPOT].Stats(q),
		Drift: cur.drift[prior.TTFT] || cur.drift[prior.TPOT]}
	if cur.set != nil {
		s.ModelVersion, s.TrainingRows = cur.set.Meta.Version, cur.set.Meta.TrainingRows
	}
	return s
}

// Stats returns the producer's current PredictorStats.
func (p *Producer) Stats() sdk.PredictorStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return *p.stats()
}

// learnPrior scores the prior alone on s, then teaches it s; the caller holds mu.
func (p *Producer) learnPrior(s *sdk.Sample) {
	if p.prior == nil {
		return
	}
	ttft, tpot := ttftTarget(s), tpotTarget(s)
	pt, pp := p.prior.Snapshot().Predict(&s.Request, s.EndpointID, "", &s.State)
	if ttft > 0 && pt > 0 {
		p.priorQ[prior.TTFT].Add(floor(pt), ttft)
	}
	if tpot > 0 && pp > 0 {
		p.priorQ[prior.TPOT].Add(floor(pp), tpot)
	}
	p.prior.Add(s, ttft, tpot)
}
