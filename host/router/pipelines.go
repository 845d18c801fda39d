package router

import (
	"context"
	"fmt"
	"net/http"
	"slices"
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

// Pipelines holds the pipelines a running router serves with, one per scheduling profile
// (config.Config.Profiles; a config with pipeline: alone has the one profile "default"), and
// replaces them while requests flow: a reload builds every profile's new pipeline aside (launch,
// handshake, GetInfo, Configure), swaps them all in at once, lets the cycles in flight on the old
// ones finish and then stops the old ones' plugins. Plugins whose binary and configuration did
// not change are not restarted but carried over (pluginhost.Pool), so the producer keeps its
// learned model when a scorer is swapped; the same pool shares a plugin between the profiles
// that use it, one process for both. A reload that fails leaves the old pipelines serving.
// It is safe for concurrent use.
type Pipelines struct {
	pool *pluginhost.Pool
	log  zerolog.Logger
	cur  atomic.Pointer[generation]

	reload   sync.Mutex     // one reload at a time
	draining sync.WaitGroup // old pipelines finishing their cycles
	closed   atomic.Bool
}

// generation is every profile's pipeline with the configuration they were built from.
type generation struct {
	seq    int
	pipes  map[string]*pipeline.Pipeline // by profile
	cfg    *config.Config
	loaded time.Time
	exp    *profileTrial // the handler's experiment of profiles; nil without one
}

// pipe returns the profile's pipeline, the default profile's when the generation has no such
// profile (a reload removed it after the request's profile was chosen).
func (g *generation) pipe(profile string) *pipeline.Pipeline {
	if p, ok := g.pipes[profile]; ok {
		return p
	}
	return g.pipes[g.cfg.DefaultProfileName()]
}

// each calls f with every profile's pipeline, in the config's order.
func (g *generation) each(f func(*pipeline.Pipeline)) {
	for _, name := range g.cfg.ProfileNames() {
		f(g.pipes[name])
	}
}

// StartPipelines builds the first pipelines from cfg.
func StartPipelines(ctx context.Context, cfg *config.Config, log zerolog.Logger) (*Pipelines, error) {
	l := &Pipelines{pool: pluginhost.NewPool(), log: log}
	pipes, err := l.build(ctx, cfg)
	if err != nil {
		return nil, err
	}
	l.cur.Store(&generation{seq: 1, pipes: pipes, cfg: cfg, loaded: time.Now(), exp: newProfileTrial(cfg)})
	return l, nil
}

// build builds every profile's pipeline from the pool, one after the other so that a plugin two
// profiles share is launched once; on error it releases what it built.
func (l *Pipelines) build(ctx context.Context, cfg *config.Config) (map[string]*pipeline.Pipeline, error) {
	pipes := map[string]*pipeline.Pipeline{}
	for _, name := range cfg.ProfileNames() {
		p, err := pipeline.BuildWith(ctx, cfg.ForProfile(name), l.pool, l.log)
		if err != nil {
			for _, built := range pipes {
				built.Close()
			}
			if len(cfg.Profiles) > 0 {
				return nil, fmt.Errorf("profile %q: %w", name, err)
			}
			return nil, err
		}
		pipes[name] = p
	}
	return pipes, nil
}

// enter returns the serving pipeline of profile ("" or a profile no longer served: the default
// one), entered (the caller must Leave it); ok is false after Close, with the last pipeline,
// closed.
func (l *Pipelines) enter(profile string) (p *pipeline.Pipeline, ok bool) {
	for {
		g := l.cur.Load()
		p := g.pipe(profile)
		if p.Enter() {
			return p, true
		}
		if l.cur.Load() == g { // not swapped out: closed for good
			return p, false
		}
		// Swapped out and closing since we loaded it: the new one is in place already.
	}
}

// enterAll returns the serving generation with every profile's pipeline entered (the caller must
// Leave each); ok is false after Close.
func (l *Pipelines) enterAll() (*generation, bool) {
	for {
		g := l.cur.Load()
		var entered []*pipeline.Pipeline
		all := true
		g.each(func(p *pipeline.Pipeline) {
			if all && p.Enter() {
				entered = append(entered, p)
			} else {
				all = false
			}
		})
		if all {
			return g, true
		}
		for _, p := range entered {
			p.Leave()
		}
		if l.cur.Load() == g {
			return g, false
		}
	}
}

// Run schedules one cycle on the default profile's serving pipeline (RunProfile).
func (l *Pipelines) Run(ctx context.Context, c *sdk.Cycle) *pipeline.Trace {
	return l.RunProfile(ctx, "", c)
}

// RunProfile schedules one cycle on the profile's serving pipeline (pipeline.Pipeline.Run); ""
// is the default profile, and so is a profile a reload removed since Choose named it.
// config.ExperimentProfile is the profile of the request's arm in the handler's experiment
// (profileTrial), and the trace names the experiment and the arm; without an experiment (a
// reload removed it) the default profile. A cycle that has begun finishes on the pipeline it
// began on, even if a reload swaps another in meanwhile. After Close every stage answers with
// its fallback.
func (l *Pipelines) RunProfile(ctx context.Context, profile string, c *sdk.Cycle) *pipeline.Trace {
	if profile == config.ExperimentProfile {
		exp := l.cur.Load().exp
		if exp == nil {
			return l.RunProfile(ctx, "", c)
		}
		arm := exp.assign(c.Request)
		t := l.RunProfile(ctx, exp.profiles[arm], c)
		if t != nil {
			t.Experiment, t.Arm = config.ProfileExperimentSlot, exp.names[arm]
		}
		return t
	}
	p, ok := l.enterServing(profile, c.Request.ID)
	if ok {
		defer p.Leave()
	}
	return p.Run(ctx, c)
}

// enterServing is enter, warning when a reload removed the profile the request (named id) chose.
func (l *Pipelines) enterServing(profile, id string) (*pipeline.Pipeline, bool) {
	p, ok := l.enter(profile)
	if profile != "" && p.Profile() != profile {
		l.log.Warn().Str("profile", profile).Str("request_id", id).Str("served_by", p.Profile()).
			Msg("a reload removed the request's profile after it was chosen; the default profile decides")
	}
	return p, ok
}

// RunProfileRoundAfter decides cycles together (pipeline.Pipeline.RunRoundAfter): cycle i on
// profiles[i]'s serving pipeline as RunProfile would (config.ExperimentProfile resolved to its
// arm's profile), the cycles of each pipeline as one round after prior's placements (nil: none),
// the pipelines concurrently. ctxs[i] is cycle i's context; the traces come back in order.
func (l *Pipelines) RunProfileRoundAfter(ctxs []context.Context, profiles []string, cycles []*sdk.Cycle, prior pipeline.Prior) []*pipeline.Trace {
	out := make([]*pipeline.Trace, len(cycles))
	exp := l.cur.Load().exp
	arms := make([]int, len(cycles))
	groups := map[string][]int{} // cycle positions by the profile deciding them
	var names []string           // the groups' profiles, in order of their first cycle
	for i, profile := range profiles {
		arms[i] = -1
		if profile == config.ExperimentProfile {
			profile = ""
			if exp != nil {
				arms[i] = exp.assign(cycles[i].Request)
				profile = exp.profiles[arms[i]]
			}
		}
		if _, ok := groups[profile]; !ok {
			names = append(names, profile)
		}
		groups[profile] = append(groups[profile], i)
	}
	var wg sync.WaitGroup
	for _, profile := range names {
		idx := groups[profile]
		wg.Go(func() {
			p, ok := l.enterServing(profile, cycles[idx[0]].Request.ID)
			if ok {
				defer p.Leave()
			}
			cs, cx := make([]*sdk.Cycle, len(idx)), make([]context.Context, len(idx))
			for k, i := range idx {
				cs[k], cx[k] = cycles[i], ctxs[i]
			}
			for k, t := range p.RunRoundAfter(cx, cs, prior) {
				out[idx[k]] = t
			}
		})
	}
	wg.Wait()
	for i, t := range out {
		if arms[i] >= 0 && t != nil {
			t.Experiment, t.Arm = config.ProfileExperimentSlot, exp.names[arms[i]]
		}
	}
	return out
}

// DetectsBefore, Detect and Order are flow control's stages (proxy.FlowStages), served by the
// default profile's pipeline: the router has one queue, whichever profile decides a request. A
// call that has begun finishes on the pipeline it began on.
func (l *Pipelines) DetectsBefore(r *sdk.Request) bool {
	p, ok := l.enter("")
	if ok {
		defer p.Leave()
	}
	return p.DetectsBefore(r)
}

// FlowProfile names the default profile, whose pipeline serves flow control's stages.
func (l *Pipelines) FlowProfile() string { return l.Config().DefaultProfileName() }

// Detect: see DetectsBefore.
func (l *Pipelines) Detect(ctx context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, pipeline.StageTrace) {
	p, ok := l.enter("")
	if ok {
		defer p.Leave()
	}
	return p.Detect(ctx, c)
}

// Order: see DetectsBefore.
func (l *Pipelines) Order(ctx context.Context, c *sdk.Cycle) (sdk.OrderKey, pipeline.StageTrace) {
	p, ok := l.enter("")
	if ok {
		defer p.Leave()
	}
	return p.Order(ctx, c)
}

// Choose returns the scheduling profile of a request (config.Config.ChooseProfile on the
// serving configuration) and the rule that chose it; a *config.ProfileError is the client's.
func (l *Pipelines) Choose(h http.Header, objective string, hasSLO bool) (profile, rule string, err error) {
	return l.Config().ChooseProfile(h, objective, hasSLO)
}

// Observe sends samples to the producers of every profile, each producer once however many
// profiles share it: a learned producer sees the requests every profile decided, those decided
// without its predictions included (the latencies are facts whoever chose the endpoint). The
// answer is the first producer's, in the config's order; pipeline.ErrNoProducer when no profile
// has one.
func (l *Pipelines) Observe(ctx context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	g, ok := l.enterAll()
	if !ok {
		return sdk.ObserveResult{}, admin.ErrShuttingDown
	}
	seen := map[*pluginhost.Plugin]bool{}
	res, err, answered := sdk.ObserveResult{}, error(pipeline.ErrNoProducer), false
	g.each(func(p *pipeline.Pipeline) {
		defer p.Leave()
		r, observed, e := p.ObserveUnseen(ctx, samples, seen)
		switch {
		case observed && !answered:
			res, err, answered = r, e, true
		case observed && e != nil:
			l.log.Warn().Err(e).Str("profile", p.Profile()).Msg("observe failed")
		}
	})
	return res, err
}

// Record adds a finished request's outcome to the experiment that decided it (pipeline.Record),
// as the serving pipeline of the trace's profile runs it: a reload that kept the experiment kept
// its outcomes.
func (l *Pipelines) Record(t *pipeline.Trace, o experiment.Outcome) {
	g := l.cur.Load()
	if g.exp != nil && t.Experiment == config.ProfileExperimentSlot {
		g.exp.outcomes.Record(t.Arm, o)
		return
	}
	g.pipe(t.Profile).Record(t, o)
}

// ExperimentReport returns the report of the serving configuration's experiment, the handler's
// of profiles or a slot's (the config has at most one); ok is false without one.
func (l *Pipelines) ExperimentReport() (rep experiment.Report, ok bool) {
	g := l.cur.Load()
	if g.exp != nil {
		return g.exp.outcomes.Report(), true
	}
	g.each(func(p *pipeline.Pipeline) {
		if !ok {
			rep, ok = p.ExperimentReport()
		}
	})
	return rep, ok
}

// Plugins returns the serving pipelines' plugins, each once, by profile in the config's order.
func (l *Pipelines) Plugins() []*pluginhost.Plugin {
	var out []*pluginhost.Plugin
	l.cur.Load().each(func(p *pipeline.Pipeline) {
		for _, pl := range p.Plugins() {
			if !slices.Contains(out, pl) {
				out = append(out, pl)
			}
		}
	})
	return out
}

// Config returns the configuration the serving pipelines were built from.
func (l *Pipelines) Config() *config.Config { return l.cur.Load().cfg }

// Reload builds every profile's pipeline from cfg and, if all succeed, swaps them in together.
// On error the serving pipelines are untouched and everything the attempt started is stopped.
func (l *Pipelines) Reload(ctx context.Context, cfg *config.Config) (admin.Result, error) {
	l.reload.Lock()
	defer l.reload.Unlock()
	if l.closed.Load() {
		return admin.Result{}, admin.ErrShuttingDown
	}
	began := time.Now()
	pipes, err := l.build(ctx, cfg)
	if err != nil {
		return admin.Result{}, err
	}
	old := l.cur.Load()
	for name, p := range pipes {
		if prev, ok := old.pipes[name]; ok {
			p.InheritExperiment(prev) // an unchanged experiment keeps its outcomes
		}
	}
	next := &generation{seq: old.seq + 1, pipes: pipes, cfg: cfg, loaded: time.Now(), exp: newProfileTrial(cfg)}
	if next.exp.same(old.exp) {
		next.exp.outcomes = old.exp.outcomes // an unchanged experiment of profiles keeps its outcomes
	}
	l.cur.Store(next)
	res := admin.Result{Generation: next.seq, Config: cfg.Origin(), Kept: []string{}, Started: []string{}, Stopping: []string{}}
	inNew := map[*pluginhost.Plugin]bool{}
	next.each(func(p *pipeline.Pipeline) {
		for i, pl := range p.Plugins() {
			if inNew[pl] {
				continue // an earlier profile has it: counted there
			}
			inNew[pl] = true
			if p.Reused()[i] {
				res.Kept = append(res.Kept, pl.Name())
			} else {
				res.Started = append(res.Started, pl.Name())
			}
		}
	})
	inOld := map[*pluginhost.Plugin]bool{}
	old.each(func(p *pipeline.Pipeline) {
		for _, pl := range p.Plugins() {
			if !inNew[pl] && !inOld[pl] {
				inOld[pl] = true
				res.Stopping = append(res.Stopping, pl.Name())
			}
		}
	})
	l.draining.Add(1)
	go func() {
		defer l.draining.Done()
		old.each((*pipeline.Pipeline).Close) // each waits for its cycles, then releases its plugins to the pool
	}()
	res.TookMs = float64(time.Since(began).Microseconds()) / 1000
	return res, nil
}

// SwapStage is SwapProfileStage in the default profile.
func (l *Pipelines) SwapStage(ctx context.Context, slot string, spec config.PluginSpec, weight *float64, origin string) (admin.Result, error) {
	return l.SwapProfileStage(ctx, "", slot, spec, weight, origin)
}

// SwapProfileStage reloads the serving configuration with one slot of profile ("": the default
// one) served by spec (config.Config.WithStage); origin names the request in error messages.
func (l *Pipelines) SwapProfileStage(ctx context.Context, profile, slot string, spec config.PluginSpec, weight *float64, origin string) (admin.Result, error) {
	cfg, err := l.Config().WithStage(profile, slot, spec, weight, origin)
	if err != nil {
		return admin.Result{}, err
	}
	return l.Reload(ctx, cfg)
}

// Close stops the serving pipelines after their cycles in flight, and waits for old ones to drain.
func (l *Pipelines) Close() {
	l.reload.Lock()
	defer l.reload.Unlock()
	if l.closed.Swap(true) {
		return
	}
	l.cur.Load().each((*pipeline.Pipeline).Close)
	l.draining.Wait()
}

// Generation returns the serving pipelines' sequence number (1 for the first) and when they
// were loaded.
func (l *Pipelines) Generation() (int, time.Time) {
	g := l.cur.Load()
	return g.seq, g.loaded
}

// String describes the serving generation, for logs.
func (l *Pipelines) String() string {
	g := l.cur.Load()
	return fmt.Sprintf("generation %d from %s", g.seq, g.cfg.Origin())
}
