// Package pipeline runs scheduling cycles through a configured chain of stages: producer →
// filters → weighted scorers → picker, with the admitter beside filters and scorers. Every stage
// call has a deadline and a declared fallback, and every cycle leaves a Trace.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/foresight-router/foresight/host/builtin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// Pipeline is a built, running set of stages. Run may be called concurrently.
type Pipeline struct {
	producer *producerSlot
	filters  []*filterSlot
	scorers  []*scorerSlot
	admitter *admitterSlot
	picker   *pickerSlot // nil: the built-in max-score picker decides

	fallbackScorer sdk.Scorer // composite-scorer
	fallbackPicker sdk.Picker // max-score-picker

	plugins    []*pluginhost.Plugin // in config order
	log        zerolog.Logger
	maxBatch   int
	maxCohorts int

	mu      sync.Mutex
	waiting []*member // cycles waiting to leave as the next cohort
	cohorts int       // cohorts travelling the pipeline now
}

// Build launches every plugin of cfg (concurrently), checks and configures each, and wires the
// pipeline. On any failure it stops what it started and returns the first error in config order.
func Build(ctx context.Context, cfg *config.Config, log zerolog.Logger) (*Pipeline, error) {
	plugins, err := launchAll(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	return Assemble(cfg, plugins, log), nil
}

// Assemble wires already running plugins (one per cfg.Plugins entry, in that order) into a pipeline.
func Assemble(cfg *config.Config, plugins []*pluginhost.Plugin, log zerolog.Logger) *Pipeline {
	p := &Pipeline{log: log, plugins: plugins, fallbackScorer: builtin.NewCompositeScorer(), fallbackPicker: builtin.NewMaxScorePicker(),
		maxBatch: cfg.Pipeline.MaxBatch, maxCohorts: cfg.Pipeline.MaxCohorts}
	byName := make(map[string]*pluginhost.Plugin, len(p.plugins))
	for _, pl := range p.plugins {
		byName[pl.Name()] = pl
	}
	pc := &cfg.Pipeline
	newS := func(ref config.StageRef, stage sdk.Stage) *slot {
		spec := cfg.Plugin(ref.PluginRef)
		timeout := pc.StageTimeout
		if spec.Timeout > 0 {
			timeout = spec.Timeout
		}
		return newSlot(byName[ref.PluginRef], stage, ref.WeightOr1(), timeout, log)
	}
	mb := pc.MaxBatch
	if pc.Producer != nil {
		s := newS(*pc.Producer, sdk.StageProducer)
		p.producer = &producerSlot{s, stageCoalescer(s, mb, sdk.BatchProducer.ProduceBatch)}
	}
	for _, ref := range pc.Filters {
		s := newS(ref, sdk.StageFilter)
		p.filters = append(p.filters, &filterSlot{s, stageCoalescer(s, mb, sdk.BatchFilter.FilterBatch)})
	}
	for _, ref := range pc.Scorers {
		s := newS(ref, sdk.StageScorer)
		p.scorers = append(p.scorers, &scorerSlot{s, stageCoalescer(s, mb, sdk.BatchScorer.ScoreBatch)})
	}
	if pc.Admitter != nil {
		s := newS(*pc.Admitter, sdk.StageAdmitter)
		p.admitter = &admitterSlot{s, stageCoalescer(s, mb, sdk.BatchAdmitter.AdmitBatch)}
	}
	if pc.Picker != nil {
		s := newS(*pc.Picker, sdk.StagePicker)
		p.picker = &pickerSlot{s, stageCoalescer(s, mb, pickBatch)}
	}
	return p
}

// launchAll starts every declared plugin concurrently.
func launchAll(ctx context.Context, cfg *config.Config, log zerolog.Logger) ([]*pluginhost.Plugin, error) {
	plugins := make([]*pluginhost.Plugin, len(cfg.Plugins))
	errs := make([]error, len(cfg.Plugins))
	var wg sync.WaitGroup
	for i := range cfg.Plugins {
		spec := &cfg.Plugins[i]
		params, err := json.Marshal(spec.Parameters)
		if err != nil {
			errs[i] = fmt.Errorf("plugin %q: parameters are not JSON-encodable: %w", spec.Name, err)
			continue
		}
		if spec.Parameters == nil {
			params = nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			plugins[i], errs[i] = pluginhost.Launch(ctx, pluginhost.Spec{
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
				pl.Stop()
			}
		}
		for _, e := range errs {
			if e != nil {
				return nil, e
			}
		}
	}
	return plugins, nil
}

// Plugins returns the running plugins in config order.
func (p *Pipeline) Plugins() []*pluginhost.Plugin { return p.plugins }

// Stats returns call and fallback counts per slot, in stage order.
func (p *Pipeline) Stats() []Stats {
	var out []Stats
	if p.producer != nil {
		out = append(out, p.producer.stats(p.producer.co.batches.Load()))
	}
	for _, f := range p.filters {
		out = append(out, f.stats(f.co.batches.Load()))
	}
	for _, s := range p.scorers {
		out = append(out, s.stats(s.co.batches.Load()))
	}
	if p.admitter != nil {
		out = append(out, p.admitter.stats(p.admitter.co.batches.Load()))
	}
	if p.picker != nil {
		out = append(out, p.picker.stats(p.picker.co.batches.Load()))
	}
	return out
}

// Close stops every plugin process.
func (p *Pipeline) Close() {
	p.stopCoalescers()
	var wg sync.WaitGroup
	for _, pl := range p.plugins {
		wg.Add(1)
		go func() { defer wg.Done(); pl.Stop() }()
	}
	wg.Wait()
}

// subset returns a cycle holding the endpoints of c at positions keep.
func subset(c *sdk.Cycle, keep []int) *sdk.Cycle {
	n := &sdk.Cycle{Request: c.Request, Now: c.Now, Seed: c.Seed, Endpoints: make([]sdk.Endpoint, len(keep))}
	for i, k := range keep {
		n.Endpoints[i] = c.Endpoints[k]
	}
	return n
}

// stopCoalescers ends every stage's sender goroutine.
func (p *Pipeline) stopCoalescers() {
	if p.producer != nil {
		p.producer.co.stop()
	}
	for _, f := range p.filters {
		f.co.stop()
	}
	for _, s := range p.scorers {
		s.co.stop()
	}
	if p.admitter != nil {
		p.admitter.co.stop()
	}
	if p.picker != nil {
		p.picker.co.stop()
	}
}
