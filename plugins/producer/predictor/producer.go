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

	"github.com/foresight-router/foresight/plugins/producer/internal/features"
	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/producer/internal/prior"
	"github.com/foresight-router/foresight/plugins/producer/internal/quality"
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

	mu        sync.Mutex // guards everything below
	params    Params
	store     *store.Store
	ttftQ     *quality.Window
	tpotQ     *quality.Window
	prior     *prior.Prior    // nil with the prior off
	priorTTFT *quality.Window // the prior alone, scored on every sample before it learns from it
	priorTPOT *quality.Window
	tripAt    float64 // the threshold in force when the drift guard went on
	training  bool
	lastTrain time.Time
	last      Training
	trained   sync.Cond // signalled when a background training ends (for Close and tests)
}

// serving is what Produce reads: the models in service (nil before the first), whether the
// drift guard holds their predictions back, the prior's latest state (nil with the prior off)
// and whether the prior alone is good enough to serve while the guard is on. It is the only
// record of each.
type serving struct {
	set          *model.Set
	drift        bool
	prior        *prior.Snapshot
	priorTrusted bool
}

// mode says how s predicts: with trees (times the prior for residual trees), with the prior
// alone, or not at all (both false). Residual trees need their prior; the prior serves alone
// before the first trees and, while it is trusted, when the drift guard holds the trees back.
func (s *serving) mode() (trees, priorOnly bool) {
	if s == nil {
		return false, false
	}
	trees = s.set != nil && !s.drift && (!s.set.Meta.Residual || s.prior.Ready())
	priorOnly = !trees && s.prior.Serves() && (s.set == nil || s.drift && s.priorTrusted)
	return trees, priorOnly
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
	p := &Producer{}
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

// Reads declares the cycle fields the producer reads: the request and every state column.
func (p *Producer) Reads() []string { return []string{"request", "endpoints.states"} }

// Params returns a copy of the parameters in force.
func (p *Producer) Params() Params {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.params
}

// Configure decodes params over DefaultParams and applies them. With a model directory it loads
// the model set found there, if any, and serves it at once; a model it cannot use is an error and
// leaves the previous configuration in force.
func (p *Producer) Configure(raw []byte) error {
	params, err := sdk.DecodeParams(raw, DefaultParams())
	if err != nil {
		return err
	}
	params.ModelDir = sdk.ResolvePath(params.ModelDir)
	var loaded *model.Set
	if params.ModelDir != "" {
		loaded, err = model.Load(params.ModelDir, features.TTFT, features.TPOT)
		switch {
		case errors.Is(err, model.ErrOutdated): // this producer's own, from another version: retrain
			sdk.Log().Warn().Err(err).Str("dir", params.ModelDir).Msg("starting without a model")
			loaded = nil
		case err != nil:
			return fmt.Errorf("parameter \"modelDir\": %w", err)
		}
	}
	if loaded != nil && loaded.Meta.Residual && params.Prior == PriorOff {
		sdk.Log().Warn().Str("dir", params.ModelDir).Msg("starting without a model: the models in modelDir correct the prior, which prior \"off\" disables")
		loaded = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.apply(params)
	if loaded != nil && loaded.Meta.Residual {
		if err := p.prior.Restore(loaded.Meta.Prior); err != nil {
			return fmt.Errorf("parameter \"modelDir\": %w", err)
		}
		p.publish(func(s *serving) { s.prior = p.prior.Snapshot() })
	}
	if loaded != nil {
		p.resetQuality()
		p.putInService(loaded)
		sdk.Log().Info().Str("dir", params.ModelDir).Uint64("model_version", loaded.Meta.Version).
			Str("source", loaded.Meta.Source).Uint64("training_rows", loaded.Meta.TrainingRows).Msg("model loaded")
	}
	return nil
}

// apply installs params; the caller holds mu (or owns p). A change of store or window sizes
// starts them afresh; the models in service stay.
func (p *Producer) apply(params Params) {
	old := p.params
	p.params = params
	if p.store == nil || old.SamplesPerBucket != params.SamplesPerBucket || old.HoldoutEvery != params.HoldoutEvery ||
		old.HoldoutSamples != params.HoldoutSamples {
		p.store = store.New(params.SamplesPerBucket, params.HoldoutEvery, params.HoldoutSamples)
	}
	if p.ttftQ == nil || old.QualityWindow != params.QualityWindow {
		p.ttftQ, p.tpotQ = quality.NewWindow(params.QualityWindow), quality.NewWindow(params.QualityWindow)
		p.priorTTFT, p.priorTPOT = quality.NewWindow(params.QualityWindow), quality.NewWindow(params.QualityWindow)
	}
	switch {
	case params.Prior == PriorOff:
		p.prior = nil
	case p.prior == nil || old.PriorFit != params.PriorFit:
		p.prior = prior.New(params.PriorFit)
	}
	snap := p.prior.Snapshot()
	p.publish(func(s *serving) { s.prior = snap })
}

// putInService makes s the model set Produce uses; the caller holds mu. The quality windows
// keep rolling across retrainings (they describe the recent predictions, whichever model made
// them); they start afresh only when the drift guard clears or a model is loaded from disk.
func (p *Producer) putInService(set *model.Set) {
	p.publish(func(s *serving) { s.set = set })
}

// resetQuality empties the quality windows; the caller holds mu.
func (p *Producer) resetQuality() {
	p.ttftQ.Reset()
	p.tpotQ.Reset()
}

// setDrift changes the drift guard's state; the caller holds mu.
func (p *Producer) setDrift(on bool) {
	cur := p.current()
	if cur.drift == on {
		return
	}
	p.publish(func(s *serving) { s.drift = on })
	ev := sdk.Log().Warn()
	if !on {
		ev = sdk.Log().Info()
	}
	ev.Bool("drift", on).Float64("ttft_mape", p.ttftQ.MAPE()).Float64("tpot_mape", p.tpotQ.MAPE()).
		Msg("drift guard")
}

// Produce predicts every endpoint's TTFT and TPOT for c: with the trees in service (times the
// prior for residual trees), with the prior alone before the first trees or, while it is
// trusted, when the drift guard holds the trees back; otherwise every prediction is invalid,
// which every stage handles.
func (p *Producer) Produce(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
	if c == nil {
		return nil, errors.New("producing: nil cycle")
	}
	p.seen(c.Now)
	out := make([]sdk.Prediction, len(c.Endpoints))
	s := p.serving.Load()
	trees, priorOnly := s.mode()
	if !trees && !priorOnly {
		return out, nil
	}
	n, nt, np := len(c.Endpoints), len(features.TTFT), len(features.TPOT)
	buf := make([]float64, n*(nt+np+4))
	ttftRows, tpotRows := buf[:n*nt], buf[n*nt:n*(nt+np)]
	ttft, tpot := buf[n*(nt+np):n*(nt+np+1)], buf[n*(nt+np+1):n*(nt+np+2)]
	baseTTFT, baseTPOT := buf[n*(nt+np+2):n*(nt+np+3)], buf[n*(nt+np+3):]
	for i := range out {
		baseTTFT[i], baseTPOT[i], ttft[i], tpot[i] = 1, 1, 1, 1
	}
	if priorOnly || s.set.Meta.Residual {
		for i := range c.Endpoints {
			e := &c.Endpoints[i]
			baseTTFT[i], baseTPOT[i] = s.prior.Predict(&c.Request, e.ID, &e.State)
		}
	}
	if trees {
		for i := range c.Endpoints {
			st := &c.Endpoints[i].State
			features.FillTTFT(ttftRows[i*nt:(i+1)*nt], &c.Request, st)
			features.FillTPOT(tpotRows[i*np:(i+1)*np], &c.Request, st)
		}
		if err := s.set.TTFT.PredictRows(ttftRows, n, ttft); err != nil {
			return nil, fmt.Errorf("TTFT model: %w", err)
		}
		if err := s.set.TPOT.PredictRows(tpotRows, n, tpot); err != nil {
			return nil, fmt.Errorf("TPOT model: %w", err)
		}
	}
	for i := range out {
		out[i] = sdk.Prediction{Valid: true, TTFTMs: floor(baseTTFT[i] * ttft[i])}
		if baseTPOT[i] > 0 { // 0: a prior serving alone that has seen no finished answer, TPOT unknown
			out[i].TPOTMs = floor(baseTPOT[i] * tpot[i])
		}
	}
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
// target to learn: a TTFT from a streamed response, or a TPOT over at least two output tokens.
func (p *Producer) Observe(_ context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	accepted := 0
	for i := range samples {
		s := &samples[i]
		p.seen(s.DispatchedAt)
		hasTTFT, hasTPOT := ttftTarget(s) > 0, tpotTarget(s) > 0
		if !hasTTFT && !hasTPOT {
			continue
		}
		accepted++
		if s.Predicted.Valid {
			if hasTTFT {
				p.ttftQ.Add(s.Predicted.TTFTMs, s.ActualTTFTMs)
			}
			if hasTPOT && s.Predicted.TPOTMs > 0 {
				p.tpotQ.Add(s.Predicted.TPOTMs, s.ActualTPOTMs)
			}
		}
		p.store.Add(*s)
		p.learnPrior(s)
	}
	p.refreshPrior()
	p.checkDrift()
	p.maybeTrain()
	return sdk.ObserveResult{Accepted: accepted, Stats: p.stats()}, nil
}

// ttftTarget is the sample's TTFT to learn, 0 if it has none: a non-streamed response arrives
// whole, so its first token's time is not observed.
func ttftTarget(s *sdk.Sample) float64 {
	if !s.Request.Streaming || !(s.ActualTTFTMs > 0) || math.IsInf(s.ActualTTFTMs, 0) {
		return 0
	}
	return s.ActualTTFTMs
}

// tpotTarget is the sample's TPOT to learn, 0 if it has none (fewer than two output tokens).
func tpotTarget(s *sdk.Sample) float64 {
	if !s.Request.Streaming || s.OutputTokens < 2 || !(s.ActualTPOTMs > 0) || math.IsInf(s.ActualTPOTMs, 0) {
		return 0
	}
	return s.ActualTPOTMs
}

// checkDrift turns the guard on when either target's rolling MAPE is above its threshold; the
// caller holds mu. Only a retrained model turns it off (see finish).
func (p *Producer) checkDrift() {
	cur := p.current()
	if p.params.DriftMAPE <= 0 || cur.drift || cur.set == nil {
		return
	}
	n := p.params.DriftMinSamples
	tt, tp := p.driftThreshold(cur.set.Meta.HoldoutTTFTMAPE), p.driftThreshold(cur.set.Meta.HoldoutTPOTMAPE)
	switch {
	case p.ttftQ.Len() >= n && p.ttftQ.MAPE() > tt:
		p.tripAt = tt
	case p.tpotQ.Len() >= n && p.tpotQ.MAPE() > tp:
		p.tripAt = tp
	default:
		return
	}
	p.setDrift(true)
}

// driftThreshold is the rolling MAPE above which a model with this held-out MAPE (0: unknown)
// is taken to have drifted.
func (p *Producer) driftThreshold(holdout float64) float64 {
	return max(p.params.DriftMAPE, p.params.DriftFactor*holdout)
}

// stats reports the model in service and the rolling error; the caller holds mu.
func (p *Producer) stats() *sdk.PredictorStats {
	q := p.params.Objective == ObjectiveQuantile
	cur := p.current()
	s := &sdk.PredictorStats{TTFT: p.ttftQ.Stats(q), TPOT: p.tpotQ.Stats(q), Drift: cur.drift}
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
	pt, pp := p.prior.Snapshot().Predict(&s.Request, s.EndpointID, &s.State)
	if ttft > 0 && pt > 0 {
		p.priorTTFT.Add(floor(pt), ttft)
	}
	if tpot > 0 && pp > 0 {
		p.priorTPOT.Add(floor(pp), tpot)
	}
	p.prior.Add(s, ttft, tpot)
}

// refreshPrior publishes what the prior learned from the last samples and whether it is trusted
// to serve alone while the drift guard is on: while its own rolling MAPE on both targets is
// within DriftFactor × DriftMAPE (or it has been scored on fewer than DriftMinSamples samples).
// Looser than the trees' bar: when the trees are held back the prior's alternative is a load
// heuristic that knows nothing of prompt lengths. The caller holds mu.
func (p *Producer) refreshPrior() {
	if p.prior == nil {
		return
	}
	snap := p.prior.Refresh()
	bar := p.params.DriftFactor * p.params.DriftMAPE
	ok := func(w *quality.Window) bool { return w.Len() < p.params.DriftMinSamples || !(w.MAPE() > bar) }
	trusted := ok(p.priorTTFT) && ok(p.priorTPOT)
	p.publish(func(s *serving) { s.prior, s.priorTrusted = snap, trusted })
}
