package router

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// Pipelines holds the pipeline a running router serves with, and replaces it while requests
// flow: a reload builds the new pipeline aside (launch, handshake, GetInfo, Configure), swaps it
// in atomically, lets the cycles in flight on the old one finish and then stops the old one's
// plugins. Plugins whose binary and configuration did not change are not restarted but carried
// over (pluginhost.Pool), so the producer keeps its learned model when a scorer is swapped. A
// reload that fails leaves the old pipeline serving.
// It is safe for concurrent use.
type Pipelines struct {
	pool *pluginhost.Pool
	log  zerolog.Logger
	cur  atomic.Pointer[generation]

	reload   sync.Mutex     // one reload at a time
	draining sync.WaitGroup // old pipelines finishing their cycles
	closed   atomic.Bool
}

// generation is one pipeline with the configuration it was built from.
type generation struct {
	seq    int
	pipe   *pipeline.Pipeline
	cfg    *config.Config
	loaded time.Time
}

// Start builds the first pipeline from cfg.
func StartPipelines(ctx context.Context, cfg *config.Config, log zerolog.Logger) (*Pipelines, error) {
	l := &Pipelines{pool: pluginhost.NewPool(), log: log}
	p, err := pipeline.BuildWith(ctx, cfg, l.pool, log)
	if err != nil {
		return nil, err
	}
	l.cur.Store(&generation{seq: 1, pipe: p, cfg: cfg, loaded: time.Now()})
	return l, nil
}

// enter returns the serving pipeline, entered (the caller must Leave it); ok is false after
// Close, with the last pipeline, closed.
func (l *Pipelines) enter() (p *pipeline.Pipeline, ok bool) {
	for {
		g := l.cur.Load()
		if g.pipe.Enter() {
			return g.pipe, true
		}
		if l.cur.Load() == g { // not swapped out: closed for good
			return g.pipe, false
		}
		// Swapped out and closing since we loaded it: the new one is in place already.
	}
}

// Run schedules one cycle on the serving pipeline (pipeline.Pipeline.Run). A cycle that has
// begun finishes on the pipeline it began on, even if a reload swaps another in meanwhile. After
// Close every stage answers with its fallback.
func (l *Pipelines) Run(ctx context.Context, c *sdk.Cycle) *pipeline.Trace {
	p, ok := l.enter()
	if ok {
		defer p.Leave()
	}
	return p.Run(ctx, c)
}

// Observe sends samples to the serving pipeline's producer (pipeline.ErrNoProducer without one).
func (l *Pipelines) Observe(ctx context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	p, ok := l.enter()
	if !ok {
		return sdk.ObserveResult{}, admin.ErrShuttingDown
	}
	defer p.Leave()
	return p.Observe(ctx, samples)
}

// Record adds a finished request's outcome to the experiment that decided it (pipeline.Record),
// as the serving pipeline runs it: a reload that kept the experiment kept its outcomes.
func (l *Pipelines) Record(t *pipeline.Trace, o experiment.Outcome) { l.Pipeline().Record(t, o) }

// ExperimentReport returns the serving pipeline's experiment report; ok is false without one.
func (l *Pipelines) ExperimentReport() (experiment.Report, bool) {
	return l.Pipeline().ExperimentReport()
}

// Pipeline returns the serving pipeline (for reading its plugins and stats; to run cycles use Run).
func (l *Pipelines) Pipeline() *pipeline.Pipeline { return l.cur.Load().pipe }

// Plugins returns the serving pipeline's plugins.
func (l *Pipelines) Plugins() []*pluginhost.Plugin { return l.Pipeline().Plugins() }

// Config returns the configuration the serving pipeline was built from.
func (l *Pipelines) Config() *config.Config { return l.cur.Load().cfg }

// Reload builds a pipeline from cfg and, if that succeeds, swaps it in. On error the serving
// pipeline is untouched and everything the attempt started is stopped.
func (l *Pipelines) Reload(ctx context.Context, cfg *config.Config) (admin.Result, error) {
	l.reload.Lock()
	defer l.reload.Unlock()
	if l.closed.Load() {
		return admin.Result{}, admin.ErrShuttingDown
	}
	began := time.Now()
	p, err := pipeline.BuildWith(ctx, cfg, l.pool, l.log)
	if err != nil {
		return admin.Result{}, err
	}
	old := l.cur.Load()
	p.InheritExperiment(old.pipe) // an unchanged experiment keeps its outcomes
	next := &generation{seq: old.seq + 1, pipe: p, cfg: cfg, loaded: time.Now()}
	l.cur.Store(next)
	res := admin.Result{Generation: next.seq, Config: cfg.Origin(), Kept: []string{}, Started: []string{}, Stopping: []string{}}
	inNew := map[*pluginhost.Plugin]bool{}
	for i, pl := range p.Plugins() {
		inNew[pl] = true
		if p.Reused()[i] {
			res.Kept = append(res.Kept, pl.Name())
		} else {
			res.Started = append(res.Started, pl.Name())
		}
	}
	for _, pl := range old.pipe.Plugins() {
		if !inNew[pl] {
			res.Stopping = append(res.Stopping, pl.Name())
		}
	}
	l.draining.Add(1)
	go func() {
		defer l.draining.Done()
		old.pipe.Close() // waits for its cycles, then releases its plugins to the pool
	}()
	res.TookMs = float64(time.Since(began).Microseconds()) / 1000
	return res, nil
}

// SwapStage reloads the serving configuration with one slot served by spec
// (config.Config.WithStage); origin names the request in error messages.
func (l *Pipelines) SwapStage(ctx context.Context, slot string, spec config.PluginSpec, weight *float64, origin string) (admin.Result, error) {
	cfg, err := l.Config().WithStage("", slot, spec, weight, origin)
	if err != nil {
		return admin.Result{}, err
	}
	return l.Reload(ctx, cfg)
}

// Close stops the serving pipeline after its cycles in flight, and waits for old ones to drain.
func (l *Pipelines) Close() {
	l.reload.Lock()
	defer l.reload.Unlock()
	if l.closed.Swap(true) {
		return
	}
	l.cur.Load().pipe.Close()
	l.draining.Wait()
}

// Generation returns the serving pipeline's sequence number (1 for the first) and when it was
// loaded.
func (l *Pipelines) Generation() (int, time.Time) {
	g := l.cur.Load()
	return g.seq, g.loaded
}

// String describes the serving generation, for logs.
func (l *Pipelines) String() string {
	g := l.cur.Load()
	return fmt.Sprintf("generation %d from %s", g.seq, g.cfg.Origin())
}
