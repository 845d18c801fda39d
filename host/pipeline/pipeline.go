// Package pipeline runs scheduling cycles through a configured chain of stages: producer →
// filters → weighted scorers → picker, with the admitter beside filters and scorers and the leading
// filters that do not read the predictions beside the producer (overlap.go). Every stage
// call has a deadline and a declared fallback, and every cycle leaves a Trace.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/foresight-router/foresight/host/builtin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/rs/zerolog"
)

// Pipeline is a built, running set of stages. Run may be called concurrently.
type Pipeline struct {
	producer *producerSlot
	filters  []*filterSlot
	scorers  []*scorerSlot
	admitter *admitterSlot
	picker   *pickerSlot // nil: the built-in max-score picker decides
	flow     flowStages  // flow control's detector and ordering policy (flow.go)

	fallbackScorer sdk.Scorer // composite-scorer
	fallbackPicker sdk.Picker // max-score-picker

	handles []handle    // every slot's, in build order
	runs    []*fusedRun // consecutive filters reached in one call
	exp     *trial      // the slot holding arms or a shadow; nil without one

	profile    string               // the scheduling profile it serves, for traces
	plugins    []*pluginhost.Plugin // in config order
	reused     []bool               // per plugin: taken running from the pool, not launched
	release    func(*pluginhost.Plugin)
	log        zerolog.Logger
	maxBatch   int
	maxCohorts int

	mu      sync.Mutex
	waiting []*member // cycles waiting to leave as the next cohort
	cohorts int       // cohorts travelling the pipeline now

	shadows sync.WaitGroup // shadow calls under way, off the requests' path

	gate    sync.Mutex
	active  int           // callers between Enter and Leave
	closing bool          // Close has begun: Enter refuses
	idle    chan struct{} // closed when closing and no caller is left
}

// handle is what the pipeline keeps of every typed slot it built, for stats and shutdown.
type handle struct {
	s  *slot
	co senderOf
}

// senderOf is a coalescer whatever its request and result types.
type senderOf interface {
	stop()
	batchCount() int64
}

// Build launches every plugin of cfg (concurrently), checks and configures each, and wires the
// pipeline. On any failure it stops what it started and returns the first error in config order.
// The pipeline owns its plugins: Close stops them.
func Build(ctx context.Context, cfg *config.Config, log zerolog.Logger) (*Pipeline, error) {
	return BuildWith(ctx, cfg, nil, log)
}

// BuildWith is Build taking the plugins from pool: those already running with the same
// fingerprint are shared, not launched again, and Close releases them to the pool. A nil pool
// is Build.
func BuildWith(ctx context.Context, cfg *config.Config, pool *pluginhost.Pool, log zerolog.Logger) (*Pipeline, error) {
	if len(cfg.Profiles) > 0 {
		// A caller that serves profiles builds each from cfg.ForProfile (router.Pipelines does).
		return nil, fmt.Errorf("%s: the config has %d scheduling profiles (profiles:) and this runs one pipeline: give it a config with pipeline:",
			cfg.File(), len(cfg.Profiles))
	}
	if pool == nil {
		pool = pluginhost.NewPool()
	}
	plugins, reused, err := launchAll(ctx, cfg, pool, log)
	if err != nil {
		return nil, err
	}
	p := Assemble(cfg, plugins, log)
	p.reused, p.release = reused, pool.Release
	return p, nil
}

// Assemble wires already running plugins (one per cfg.Plugins entry, in that order) into a
// pipeline, which owns them: Close stops them.
func Assemble(cfg *config.Config, plugins []*pluginhost.Plugin, log zerolog.Logger) *Pipeline {
	p := &Pipeline{log: log, profile: cfg.Profile(), plugins: plugins, fallbackScorer: builtin.NewCompositeScorer(), fallbackPicker: builtin.NewMaxScorePicker(),
		maxBatch: cfg.Pipeline.MaxBatch, maxCohorts: cfg.Pipeline.MaxCohorts, reused: make([]bool, len(plugins)),
		release: (*pluginhost.Plugin).Stop, idle: make(chan struct{})}
	byName := make(map[string]*pluginhost.Plugin, len(p.plugins))
	for _, pl := range p.plugins {
		byName[pl.Name()] = pl
	}
	pc := &cfg.Pipeline
	// build returns the typed slot (*producerSlot, *filterSlot, …) serving stage with plugin name.
	build := func(name string, stage sdk.Stage, weight float64) any {
		s := newSlot(byName[name], stage, weight, newStageDeadline(pc, cfg.Plugin(name).Timeout), log)
		keep := func(typed any, co senderOf) any {
			p.handles = append(p.handles, handle{s, co})
			return typed
		}
		mb := pc.MaxBatch
		switch stage {
		case sdk.StageProducer:
			t := &producerSlot{s, stageCoalescer(s, mb, transport.BatchProducer.ProduceBatch), newLastPredictions(pc.PredictionMaxAge)}
			return keep(t, t.co)
		case sdk.StageFilter:
			t := &filterSlot{s, stageCoalescer(s, mb, transport.BatchFilter.FilterBatch)}
			return keep(t, t.co)
		case sdk.StageScorer:
			t := &scorerSlot{s, stageCoalescer(s, mb, transport.BatchScorer.ScoreBatch)}
			return keep(t, t.co)
		case sdk.StageAdmitter:
			t := &admitterSlot{s, stageCoalescer(s, mb, transport.BatchAdmitter.AdmitBatch)}
			return keep(t, t.co)
		case sdk.StageDetector:
			t := &detectorSlot{slot: s, co: stageCoalescer(s, mb, detectBatch)}
			return keep(t, t.co)
		case sdk.StageOrder:
			t := &orderSlot{s, stageCoalescer(s, mb, orderBatch)}
			return keep(t, t.co)
		default:
			t := &pickerSlot{s, stageCoalescer(s, mb, pickBatch)}
			return keep(t, t.co)
		}
	}
	expSlot, expRef := cfg.Experiment()
	// position builds a slot's primary (its plugin, or its first arm) and, for the experiment's
	// slot, the experiment.
	position := func(ref *config.StageRef, stage sdk.Stage, index int) any {
		primary := build(ref.Primaries()[0], stage, ref.WeightOr1())
		if ref == expRef {
			p.exp = newExperiment(expSlot, stage, index, ref, primary, func(name string) any { return build(name, stage, ref.WeightOr1()) })
		}
		return primary
	}
	if pc.Producer != nil {
		p.producer = position(pc.Producer, sdk.StageProducer, 0).(*producerSlot)
	}
	for i := range pc.Filters {
		p.filters = append(p.filters, position(&pc.Filters[i], sdk.StageFilter, i).(*filterSlot))
	}
	for i := range pc.Scorers {
		p.scorers = append(p.scorers, position(&pc.Scorers[i], sdk.StageScorer, i).(*scorerSlot))
	}
	if pc.Admitter != nil {
		p.admitter = position(pc.Admitter, sdk.StageAdmitter, 0).(*admitterSlot)
	}
	if pc.Picker != nil {
		p.picker = position(pc.Picker, sdk.StagePicker, 0).(*pickerSlot)
	}
	p.flow.builtins = NewFlowBuiltins(cfg.FlowControl, log)
	if pc.Detector != nil {
		p.flow.detector = position(pc.Detector, sdk.StageDetector, 0).(*detectorSlot)
	}
	if pc.Order != nil {
		p.flow.order = position(pc.Order, sdk.StageOrder, 0).(*orderSlot)
	}
	p.fuseFilters(pc.MaxBatch)
	return p
}

// launchAll acquires every declared plugin from pool, concurrently.
func launchAll(ctx context.Context, cfg *config.Config, pool *pluginhost.Pool, log zerolog.Logger) ([]*pluginhost.Plugin, []bool, error) {
	plugins := make([]*pluginhost.Plugin, len(cfg.Plugins))
	reused := make([]bool, len(cfg.Plugins))
	errs := make([]error, len(cfg.Plugins))
	var wg sync.WaitGroup
	for i := range cfg.Plugins {
		spec := &cfg.Plugins[i]
		params, err := spec.ParametersJSON()
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			plugins[i], reused[i], errs[i] = pool.Acquire(ctx, pluginhost.Spec{
				Name: spec.Name, Type: spec.Type, Stage: cfg.StageOf(spec.Name),
				Path: cfg.ResolvePath(spec), Args: spec.Args, Env: append([]string{sdk.ConfigDirEnv + "=" + cfg.Dir()}, spec.Environ()...),
				SHA256: spec.SHA256, Version: spec.Version,
				Params: params,
			}, log)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, pl := range plugins {
			if pl != nil {
				pool.Release(pl)
			}
		}
		for _, e := range errs {
			if e != nil {
				return nil, nil, e
			}
		}
	}
	return plugins, reused, nil
}

// Profile returns the scheduling profile the pipeline serves (config.Config.Profile).
func (p *Pipeline) Profile() string { return p.profile }

// Plugins returns the running plugins in config order.
func (p *Pipeline) Plugins() []*pluginhost.Plugin { return p.plugins }

// Reused reports, per plugin in config order, whether BuildWith took it running from the pool.
func (p *Pipeline) Reused() []bool { return p.reused }

// Enter admits a caller of Run or Observe until the matching Leave; it returns false once Close
// has begun, and the caller must then use another pipeline. Close waits for every caller that
// entered to leave. (Callers that own the pipeline outright, as the benches do, need neither.)
func (p *Pipeline) Enter() bool {
	p.gate.Lock()
	defer p.gate.Unlock()
	if p.closing {
		return false
	}
	p.active++
	return true
}

// Leave ends what Enter began.
func (p *Pipeline) Leave() {
	p.gate.Lock()
	defer p.gate.Unlock()
	p.active--
	if p.closing && p.active == 0 {
		close(p.idle)
	}
}

// Stats returns call and fallback counts per slot, in stage order (an experiment's arms and
// shadow after the slot's primary).
func (p *Pipeline) Stats() []Stats {
	out := make([]Stats, 0, len(p.handles))
	for _, h := range p.handles {
		st := h.s.stats(h.co.batchCount())
		st.Profile = p.profile
		out = append(out, st)
	}
	return out
}

// Close refuses new callers, waits for those that entered to leave (their cycles end within the
// stage deadlines), then stops the stages and releases the plugins: stops them, or for a pipeline
// built from a pool, hands them back to it (a plugin another pipeline shares keeps running). It
// is safe to call more than once.
func (p *Pipeline) Close() {
	p.gate.Lock()
	if p.closing {
		p.gate.Unlock()
		return
	}
	p.closing = true
	if p.active == 0 {
		close(p.idle)
	}
	p.gate.Unlock()
	<-p.idle
	p.shadows.Wait() // bounded by the shadow's deadline
	p.stopCoalescers()
	var wg sync.WaitGroup
	for _, pl := range p.plugins {
		wg.Add(1)
		go func() { defer wg.Done(); p.release(pl) }()
	}
	wg.Wait()
}

// stopCoalescers ends every stage's sender goroutine.
func (p *Pipeline) stopCoalescers() {
	for _, h := range p.handles {
		h.co.stop()
	}
}
