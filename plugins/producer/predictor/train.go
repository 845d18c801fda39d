package predictor

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/foresight-router/foresight/plugins/producer/internal/features"
	"github.com/foresight-router/foresight/plugins/producer/internal/gbdt"
	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/producer/internal/prior"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// job is one training run, prepared under the producer's lock and run without it.
type job struct {
	params   Params
	version  uint64
	at       time.Time
	samples  []sdk.Sample
	holdout  []sdk.Sample
	previous *model.Set
	// prior is the base residual trees learn the ratio to, and priorState its state to persist
	// with them; nil with the prior off or not yet ready (the trees then learn latencies).
	prior      *prior.Snapshot
	priorState []byte
}

// Training describes a finished training run.
type Training struct {
	// Rows are the TTFT rows trained on; Took is the wall time of both targets' training,
	// evaluation and persistence.
	Rows uint64
	Took time.Duration
	// TTFTMAPE and TPOTMAPE are the new models' errors on the held-out samples (NaN without any).
	TTFTMAPE, TPOTMAPE float64
}

// LastTraining returns the last finished training run (zero before one).
func (p *Producer) LastTraining() Training {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// result is what a training run produced.
type result struct {
	set                *model.Set
	ttftMAPE, tpotMAPE float64 // on the held-out samples; NaN without any
	took               time.Duration
	err                error
}

// maybeTrain starts a training run when none runs, MinNewSamples new samples arrived and
// RetrainIntervalMs of cycle time passed since the last; the caller holds mu.
func (p *Producer) maybeTrain() {
	prev := p.current().set
	minNew, intervalMs := p.params.MinNewSamples, p.params.RetrainIntervalMs
	if p.params.YoungRows > 0 && (prev == nil || prev.Meta.TrainingRows < uint64(p.params.YoungRows)) {
		minNew, intervalMs = p.params.YoungMinNewSamples, p.params.YoungRetrainIntervalMs
	}
	if p.training || p.store.Added() < uint64(minNew) {
		return
	}
	now := time.Unix(0, p.lastNow.Load())
	interval := time.Duration(intervalMs * float64(time.Millisecond))
	if !p.lastTrain.IsZero() && now.Sub(p.lastTrain) < interval {
		return
	}
	j := &job{params: p.params, at: now, samples: p.store.Training(nil), holdout: p.store.Holdout(nil), previous: prev, version: 1}
	if prev != nil {
		j.version = prev.Meta.Version + 1
	}
	if snap := p.prior.Snapshot(); snap.Ready() {
		state, err := p.prior.MarshalJSON()
		if err != nil {
			sdk.Log().Error().Err(err).Msg("encoding the prior; training on latencies")
		} else {
			j.prior, j.priorState = snap, state
		}
	}
	p.store.MarkTrained()
	p.lastTrain = now
	if p.params.TrainInline {
		p.finish(j.run())
		return
	}
	p.training = true
	go func() {
		r := j.run()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.training = false
		p.finish(r)
		p.trained.Broadcast()
	}()
}

func finiteOr0(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// WaitIdle returns once no training and no exchange with the other replicas runs.
func (p *Producer) WaitIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.training || p.exchanging {
		p.trained.Wait()
	}
}

// finish puts a training result in service; the caller holds mu. A target's drift guard that is
// on goes off when its new model's held-out error is under the threshold (or there is no
// held-out data to judge it by).
func (p *Producer) finish(r result) {
	log := sdk.Log()
	if r.err != nil {
		log.Error().Err(r.err).Msg("training failed; the previous model stays in service")
		return
	}
	if r.set == nil {
		return
	}
	if p.current().set == nil {
		p.resetQuality(prior.TTFT, prior.TPOT) // the errors so far are the prior's alone, not the trees'
	}
	p.clearDrift([2]float64{r.ttftMAPE, r.tpotMAPE})
	p.putInService(r.set)
	if p.share != nil {
		p.share.own, p.share.trained = r.set, true
	}
	p.last = Training{Rows: r.set.Meta.TrainingRows, Took: r.took, TTFTMAPE: r.ttftMAPE, TPOTMAPE: r.tpotMAPE}
	log.Info().Uint64("model_version", r.set.Meta.Version).Uint64("training_rows", r.set.Meta.TrainingRows).
		Float64("holdout_ttft_mape", r.ttftMAPE).Float64("holdout_tpot_mape", r.tpotMAPE).
		Dur("took", r.took).Msg("model trained")
}

// run trains both targets, evaluates them on the held-out samples and persists them. A target
// with too few rows keeps its previous model; with no previous model either, nothing is put in
// service yet.
func (j *job) run() result {
	began := time.Now()
	minRows := max(2*j.params.Model.MinSamplesLeaf, 2)
	ttft, tpot := j.base(ttftTarget, prior.TTFT), j.base(tpotTarget, prior.TPOT)
	ttftData := dataset(j.samples, features.TTFT, ttft.ratio, features.FillTTFT)
	tpotData := dataset(j.samples, features.TPOT, tpot.ratio, features.FillTPOT)
	set := &model.Set{Meta: model.Meta{Version: j.version, Source: "trained", TrainedAt: j.at,
		Objective: j.params.Objective, TTFTFeatures: features.TTFT, TPOTFeatures: features.TPOT,
		TrainingRows: uint64(len(ttftData.Label)), Residual: j.prior != nil, Prior: j.priorState}}
	if j.params.Objective == ObjectiveQuantile {
		set.Meta.Quantile = j.params.Quantile
	}
	var err error
	if set.TTFT, err = j.fit(ttftData, minRows, features.TTFTMonotone, j.previous, func(s *model.Set) *model.Model { return s.TTFT }); err != nil {
		return result{err: fmt.Errorf("TTFT model: %w", err)}
	}
	if set.TPOT, err = j.fit(tpotData, minRows, features.TPOTMonotone, j.previous, func(s *model.Set) *model.Model { return s.TPOT }); err != nil {
		return result{err: fmt.Errorf("TPOT model: %w", err)}
	}
	if set.TTFT == nil || set.TPOT == nil {
		return result{}
	}
	r := result{set: set,
		ttftMAPE: heldOutMAPE(set.TTFT, j.holdout, ttft, features.FillTTFT, len(features.TTFT)),
		tpotMAPE: heldOutMAPE(set.TPOT, j.holdout, tpot, features.FillTPOT, len(features.TPOT)),
		took:     time.Since(began)}
	set.Meta.HoldoutTTFTMAPE, set.Meta.HoldoutTPOTMAPE = finiteOr0(r.ttftMAPE), finiteOr0(r.tpotMAPE)
	if dir := j.params.ModelDir; dir != "" {
		if err := model.Save(dir, set); err != nil {
			sdk.Log().Error().Err(err).Str("dir", dir).Msg("persisting the model; it serves from memory only")
		}
	}
	return r
}

// fit trains one target's model, or keeps the previous one when there are too few rows. monotone
// holds its features' directions (features.TTFTMonotone, TPOTMonotone), one per feature; the
// trees are held to them when the monotone parameter says so.
func (j *job) fit(d gbdt.Dataset, minRows int, monotone []int8, prev *model.Set, of func(*model.Set) *model.Model) (*model.Model, error) {
	if len(d.Label) < minRows {
		if prev != nil {
			return of(prev), nil
		}
		return nil, nil
	}
	gp := j.params.gbdt(j.params.Objective)
	if j.params.Monotone {
		gp.Monotone = monotone
	}
	trained, err := gbdt.Train(d, gp)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := trained.WriteText(&buf); err != nil {
		return nil, err
	}
	return model.Parse(buf.Bytes(), len(d.Cols)) // served by leaves, as any loaded model
}

// filler writes a target's features of a request on an endpoint into a row.
type filler func([]float64, *sdk.Request, string, *sdk.EndpointState)

// eachRow calls f with every sample that has the target, its features and the target; row is
// reused between calls.
func eachRow(samples []sdk.Sample, nFeatures int, target func(*sdk.Sample) float64, fill filler, f func(s *sdk.Sample, row []float64, y float64)) {
	row := make([]float64, nFeatures)
	for i := range samples {
		s := &samples[i]
		if y := target(s); y > 0 {
			fill(row, &s.Request, s.EndpointID, &s.State)
			f(s, row, y)
		}
	}
}

// dataset builds the column-major training data of one target.
func dataset(samples []sdk.Sample, names []string, target func(*sdk.Sample) float64, fill filler) gbdt.Dataset {
	d := gbdt.Dataset{Names: names, Cols: make([][]float64, len(names))}
	eachRow(samples, len(names), target, fill, func(_ *sdk.Sample, row []float64, y float64) {
		for f, v := range row {
			d.Cols[f] = append(d.Cols[f], v)
		}
		d.Label = append(d.Label, y)
	})
	return d
}

// target is one target of a training job: its latency, and the prior's prediction it is learned
// relative to (1 without a prior).
type target struct {
	latency func(*sdk.Sample) float64
	prior   func(*sdk.Sample) float64
}

// base returns the job's target of latency, whose prior prediction is the which-th (prior.TTFT
// or prior.TPOT) of the job's prior.
func (j *job) base(latency func(*sdk.Sample) float64, which int) target {
	t := target{latency: latency, prior: func(*sdk.Sample) float64 { return 1 }}
	if j.prior != nil {
		t.prior = func(s *sdk.Sample) float64 {
			ttft, tpot := j.prior.Predict(&s.Request, s.EndpointID, "", &s.State)
			return floor([2]float64{ttft, tpot}[which])
		}
	}
	return t
}

// ratio is what the trees learn: the latency over the prior's prediction (the latency itself
// without a prior); 0 when the sample has no such latency.
func (t target) ratio(s *sdk.Sample) float64 {
	y := t.latency(s)
	if y <= 0 {
		return 0
	}
	return y / t.prior(s)
}

// heldOutMAPE is the mean absolute percentage error of prior × m on the samples with a target;
// NaN without any.
func heldOutMAPE(m *model.Model, samples []sdk.Sample, t target, fill filler, nFeatures int) float64 {
	sum, n := 0.0, 0
	eachRow(samples, nFeatures, t.latency, fill, func(s *sdk.Sample, row []float64, y float64) {
		sum += math.Abs(floor(t.prior(s)*m.Predict(row))-y) / y
		n++
	})
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
