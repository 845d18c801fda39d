package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/rs/zerolog"
)

// simStageTimeout is the stage deadline of the strategies' pipelines. Their plugin processes
// share this machine's cores with the simulator (and, with --replicas, with each other, where a
// gateway's replicas run on pods of their own): at the example configs' 25 ms a busy machine
// misses deadlines and routes by fallbacks, which measures the machine, not the strategy, and
// makes runs differ from one to the next. The simulation runs in virtual time, so a long
// deadline costs the results nothing.
const simStageTimeout = 10 * time.Second

// strategyConfigs maps the routing bench's strategies to the example pipelines an operator would
// deploy; "oracle" is the simulator's own.
var strategyConfigs = map[string]string{
	"rr":                "round-robin.yaml",
	"least-load":        "least-load.yaml",
	"load-prefix-111":   "load-prefix-111.yaml",
	"load-prefix-322":   "load-prefix-322.yaml",
	"predicted-latency": "pipeline.yaml",
	"headroom":          "headroom.yaml",
	"llumnix-slo":       "llumnix-slo.yaml",
}

// RoutingResult is what RunRouting measured; its JSON is bench routing's.
type RoutingResult struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Servers  int    `json:"servers"`
	Requests int    `json:"requests"`
	Preset   string `json:"preset"`
	Replicas int    `json:"replicas"`
	Assign   string `json:"assign,omitempty"`
	Alone    bool   `json:"alone,omitempty"`
	// State and PublishDelayMs are the replicas' state mode and the plane's delay (StateNATS).
	State          string  `json:"state,omitempty"`
	PublishDelayMs float64 `json:"publish_delay_ms,omitempty"`
	// Prefix is where the routers' prefix matches came from (--prefix), Shared the fraction of
	// the requests another client sent straight to the servers (--shared), and
	// IdealCachedRatio the cached fraction of the routed requests' prompt tokens with one
	// unbounded cache (idealCachedRatio).
	Prefix           string                   `json:"prefix"`
	Shared           float64                  `json:"shared,omitempty"`
	IdealCachedRatio float64                  `json:"ideal_cached_ratio"`
	Strategies       map[string]StrategyStats `json:"strategies"`
	order            []string                 // strategies in the order they were asked for
}

// StrategyStats are one strategy's figures: the sim/stats summary of its run and more.
type StrategyStats struct {
	*stats.Summary
	// outcomes are kept for the report, not printed.
	outcomes      []stats.Outcome
	PrefixHitRate float64 `json:"prefix_hit_rate"`
	// CachedRatio is the fraction of the routed requests' prompt tokens served from the servers'
	// prefix caches (PrefixHitRate counts every request, a shared fleet's direct ones too).
	CachedRatio float64 `json:"cached_ratio"`
	// Direct summarizes a shared fleet's direct requests (--shared); the Summary is the routed
	// ones'.
	Direct      *stats.Summary `json:"direct,omitempty"`
	WallSeconds float64        `json:"wall_s"`
	// Predictor is the producer's own report at the end of the run (pipelines with a producer;
	// with replicas, the first replica's).
	Predictor *sdk.PredictorStats `json:"predictor,omitempty"`
	// Online is how the dispatch-time predictions held as the run went on (strategies that
	// predict).
	Online *stats.Accuracy `json:"online_accuracy,omitempty"`
	// Classes summarizes each request class on its own (runs with --class).
	Classes map[string]stats.Summary `json:"classes,omitempty"`
	// Servers summarizes the requests each server served, by endpoint id.
	Servers map[string]stats.Summary `json:"servers,omitempty"`
	// Unavailable says why a strategy could not run (then nothing else is set).
	Unavailable string `json:"unavailable,omitempty"`
}

// unavailable is a strategy that cannot run yet, reported rather than faked.
type unavailable struct{ reason string }

// Error returns the reason.
func (u unavailable) Error() string { return u.reason }

// DefaultNoise is the simulated engines' relative standard deviation of step times unless
// --noise says otherwise.
const DefaultNoise = 0.05

// RoutingOptions are what RunRouting compares: bench routing's flags.
type RoutingOptions struct {
	// Scenario is the workload (sim/workload), Strategies the comma-separated strategies (see
	// RunRouting), Preset the engine preset, Examples the directory of the strategies' pipeline
	// configs and Trace the trace file of the trace scenarios.
	Scenario, Strategies, Preset, Examples, Trace string
	// Classes are request classes NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream].
	Classes []string
	// Servers is the number of simulated servers; Requests the requests to simulate (0: the
	// scenario's default; traces: every row).
	Servers, Requests int
	// Rate is the arrival rate per server in requests/s (0: the scenario's default); Noise the
	// relative standard deviation of engine step times (bench routing's default: DefaultNoise).
	Rate, Noise float64
	// Seed seeds the workload, the engines' noise and the cycles.
	Seed uint64
	// Prefill and Decode, when either is set, make the fleet prefill/decode disaggregated: Prefill
	// servers of role prefill, then Decode of role decode (Servers is their sum), and Split the
	// split mode (config.SplitAdaptive when ""). The oracle and flow control do not model it.
	Prefill, Decode int
	Split           string
	// Replicas is the number of routers the arrivals are spread over (0 or 1: one), each with its
	// own pipeline, in-flight view and prefix index; Assign how a gateway spreads them: "random"
	// (the default) or "session" (affinity: a session's requests to one replica).
	Replicas int
	Assign   string
	// Alone keeps each replica's producer to the samples of its own requests; by default they
	// share them (replicas.go).
	Alone bool
	// State is how several replicas share their requests in flight: StateNATS (the default) or
	// StateNone (replicas.go); PublishDelay the state plane's delay (negative:
	// DefaultPublishDelay).
	State        string
	PublishDelay time.Duration
	// Prefix is the routers' prefix source: PrefixRouter (the default), PrefixEvents or
	// PrefixBoth; Shared the fraction of the requests another client sends straight to the
	// servers (prefixsource.go).
	Prefix string
	Shared float64
	// Progress, when set, gets a progress bar per strategy: give it a terminal only.
	Progress io.Writer
	// Log is the logger of the strategies' pipelines and plugins; the zero value logs nothing.
	Log zerolog.Logger
	// AtExit, when set, registers each pipeline's stop function (see the package documentation).
	AtExit func(func())
}

// RunRouting generates one workload, then runs it through a simulated vLLM fleet (sim/cluster)
// once per strategy: each strategy but the oracle is an example pipeline (rr, least-load,
// load-prefix-111, load-prefix-322, predicted-latency, headroom) or a pipeline config named by its path
// (FILE.yaml) run through the real host pipeline; the
// oracle simulates every candidate forward and takes the true lowest TTFT. A strategy that
// cannot run is reported with the reason rather than failing the bench.
func RunRouting(ctx context.Context, o RoutingOptions) (*RoutingResult, error) {
	w, err := routingWorkload(o)
	if err != nil {
		return nil, err
	}
	fleet, err := routingFleet(o)
	if err != nil {
		return nil, err
	}
	return runStrategies(ctx, o, fleet, w)
}

// routingWorkload generates the workload o describes.
func routingWorkload(o RoutingOptions) (*workload.Workload, error) {
	classes, err := workload.ParseClasses(o.Classes)
	if err != nil {
		return nil, err
	}
	return workload.Scenario(o.Scenario, workload.Params{Servers: o.Servers, RatePerServer: o.Rate,
		Requests: o.Requests, Seed: o.Seed, TracePath: o.Trace, Classes: classes})
}

// routingFleet is o's simulated fleet: o.Servers engines of o.Preset (a preset or a mixed fleet,
// engine.Fleet), each with its own seed, disaggregated when o says so (disaggregated).
func routingFleet(o RoutingOptions) (cluster.Config, error) {
	fleet, err := simulatedFleet(o.Preset, o.Servers, o.Noise, o.Seed)
	if err != nil {
		return fleet, err
	}
	fleet.Disaggregation, err = disaggregated(o)
	return fleet, err
}

// simulatedFleet is n engines of the fleet spec with the given noise, server i seeded seed·1000+i.
func simulatedFleet(spec string, n int, noise float64, seed uint64) (cluster.Config, error) {
	engines, err := engine.Fleet(spec, n)
	if err != nil {
		return cluster.Config{}, err
	}
	for i := range engines {
		engines[i].Noise, engines[i].Seed = noise, seed*1000+uint64(i)
	}
	return cluster.Config{Seed: seed, Engines: engines}, nil
}

// runStrategies runs w through fleet once per strategy of o.
func runStrategies(ctx context.Context, o RoutingOptions, fleet cluster.Config, w *workload.Workload) (*RoutingResult, error) {
	res := &RoutingResult{Scenario: o.Scenario, Seed: o.Seed, Servers: o.Servers, Requests: len(w.Requests),
		Preset: o.Preset, Replicas: max(o.Replicas, 1), Assign: o.Assign, Alone: o.Alone, Strategies: map[string]StrategyStats{}}
	assign, err := replicaAssign(o)
	if err != nil {
		return nil, err
	}
	plane, err := newReplicaPlane(o)
	if err != nil {
		return nil, err
	}
	defer plane.close()
	if plane != nil {
		res.State, res.PublishDelayMs = StateNATS, float64(plane.delay)/float64(time.Millisecond)
	}
	sources, err := prefixSources(o)
	if err != nil {
		return nil, err
	}
	direct, err := sharedFleet(o.Shared, len(fleet.Engines), o.Seed)
	if err != nil {
		return nil, err
	}
	res.Prefix, res.Shared, res.IdealCachedRatio = cmp.Or(o.Prefix, PrefixRouter), o.Shared, idealCachedRatio(w.Requests, direct)
	for _, name := range strings.Split(o.Strategies, ",") {
		name = strings.TrimSpace(name)
		for _, events := range sources {
			run := runName(name, events, o)
			res.order = append(res.order, run)
			st, err := runStrategy(ctx, o, withPrefixSource(fleet, events, direct), w, name, run, assign, plane)
			if err != nil {
				return nil, err
			}
			res.Strategies[run] = st
		}
	}
	return res, nil
}

// runStrategy runs w through fleet with strategy name, reported as run.
func runStrategy(ctx context.Context, o RoutingOptions, fleet cluster.Config, w *workload.Workload, name, run string,
	assign cluster.Assign, plane *replicaPlane) (StrategyStats, error) {
	base, fc, err := strategyFlow(name)
	if err != nil {
		return StrategyStats{}, fmt.Errorf("strategy %q: %w", name, err)
	}
	if fc != nil && fleet.Disaggregation != nil {
		return StrategyStats{Unavailable: "the simulated flow control holds whole requests, not a prefill and a decode hop"}, nil
	}
	fleet.FlowControl, fleet.State = fc, plane.next()
	sts, err := newReplicas(ctx, base, o, fleet.State)
	var u unavailable
	if errors.As(err, &u) {
		return StrategyStats{Unavailable: u.reason}, nil
	}
	if err != nil {
		return StrategyStats{}, err
	}
	if len(sts) > 0 {
		withPipelineStages(fc, sts[0].router)
	}
	began := time.Now()
	bar := newProgress(o.Progress, len(w.Requests), run)
	fleet.Progress = func() { _ = bar.Add(1) }
	replicas := make([]cluster.Replica, len(sts))
	for i, st := range sts {
		replicas[i] = cluster.Replica{Router: st.router, Observe: st.observe}
	}
	out, err := cluster.RunReplicas(fleet, w.Requests, replicas, assign)
	_ = bar.Finish()
	var predictor *sdk.PredictorStats
	for i, st := range sts {
		if st.samples != nil {
			st.samples.Flush(ctx)
			if i == 0 {
				predictor = st.samples.Counts().Stats
			}
		}
		st.close()
	}
	if err != nil {
		return StrategyStats{}, fmt.Errorf("strategy %q: %w", run, err)
	}
	mine := routed(out.Outcomes)
	sum := stats.Summarize(mine)
	st := StrategyStats{Summary: &sum, outcomes: mine, PrefixHitRate: out.PrefixHitRate(),
		CachedRatio: cachedRatio(w.Requests, out.Outcomes), WallSeconds: time.Since(began).Seconds(),
		Predictor: predictor, Online: stats.Online(mine), Classes: classSummaries(w.Requests, out.Outcomes),
		Servers: serverSummaries(mine)}
	if fleet.Direct != nil {
		d := stats.Summarize(directOnly(out.Outcomes))
		st.Direct = &d
	}
	return st, nil
}

// strategy is one way of routing the bench runs: a router, the observer that feeds its producer
// (nil without one), and the function that releases it.
type strategy struct {
	router  cluster.Router
	observe cluster.Observer
	samples *feedback.Batcher // nil without a producer
	close   func()
}

// newStrategy builds a strategy: the simulator's oracle, or an example pipeline run through the
// real host pipeline. A producer in the pipeline learns from the simulated requests as it would
// from live ones: samples batched every 100 ms of virtual time or 256 samples (host/feedback).
// For reproducible runs it trains inline (trainInline) and starts cold (no modelDir); producer
// adds parameters (a replica's share of the learning). A config of scheduling profiles runs one
// pipeline per profile, each request in the one the config's profile handler chooses (by its
// SLO: the simulator's requests carry no headers), every producer learning from every sample.
func newStrategy(ctx context.Context, name string, o RoutingOptions, producer map[string]any) (_ *strategy, err error) {
	if name == "oracle" {
		if o.Prefill > 0 {
			return nil, unavailable{"the oracle simulates whole requests, not a prefill and a decode hop"}
		}
		return &strategy{router: cluster.Oracle{}, close: func() {}}, nil
	}
	path := name // a config file of the operator's own
	if file, ok := strategyConfigs[name]; ok {
		path = filepath.Join(o.Examples, file)
	} else if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
		return nil, fmt.Errorf("unknown strategy %q (known: rr, least-load, load-prefix-111, load-prefix-322, predicted-latency, headroom, llumnix-slo, oracle, or a pipeline config FILE.yaml)", name)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	configs := map[string]*config.Config{"": cfg}
	if len(cfg.Profiles) > 0 {
		configs = map[string]*config.Config{}
		for _, n := range cfg.ProfileNames() {
			configs[n] = cfg.ForProfile(n)
		}
	}
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	pipes := map[string]*pipeline.Pipeline{}
	for profile, pc := range configs {
		cleanup, err := prepare(name, filepath.Base(path), pc, o, producer)
		if err != nil {
			return nil, err
		}
		closers = append(closers, cleanup)
		p, err := pipeline.Build(ctx, pc, o.Log)
		if err != nil {
			return nil, fmt.Errorf("strategy %q: %w", name, err)
		}
		onExit(o.AtExit, p.Close)
		closers = append(closers, p.Close)
		pipes[profile] = p
	}
	st := &strategy{close: closeAll}
	if p, one := pipes[""]; one {
		st.router = cluster.PipelineRouter{Pipeline: p}
	} else {
		st.router = cluster.ProfilesRouter{Pipelines: pipes, Choose: chooseProfile(cfg)}
	}
	var learners []*pipeline.Pipeline
	for _, n := range slices.Sorted(maps.Keys(pipes)) {
		if pipes[n].HasProducer() {
			learners = append(learners, pipes[n])
		}
	}
	if len(learners) > 0 {
		st.samples = feedback.New(func(ctx context.Context, s []sdk.Sample) (sdk.ObserveResult, error) {
			var first sdk.ObserveResult
			for i, p := range learners { // the report is the first profile's, by name
				res, err := p.Observe(ctx, s)
				if err != nil {
					return res, err
				}
				if i == 0 {
					first = res
				}
			}
			return first, nil
		}, 0, 0)
		st.observe = func(s sdk.Sample, finished time.Time) { st.samples.Add(ctx, s, finished) }
	}
	return st, nil
}

// prepare sets what the bench needs in one pipeline's config: a stage deadline the machine's
// load cannot hit, a learned producer that trains inline and starts cold, and for the
// llumnix-slo strategy profiles of the simulated fleet. It returns what removes them.
func prepare(name, file string, cfg *config.Config, o RoutingOptions, producer map[string]any) (func(), error) {
	cfg.Pipeline.StageTimeout = max(cfg.Pipeline.StageTimeout, simStageTimeout)
	if name == "predicted-latency" && cfg.Pipeline.Producer == nil {
		return nil, unavailable{fmt.Sprintf("%s has no producer", file)}
	}
	pc := cfg.Pipeline.Producer
	if pc == nil {
		return func() {}, nil
	}
	spec := cfg.Plugin(pc.PluginRef)
	if spec.Parameters == nil {
		spec.Parameters = map[string]any{}
	}
	switch spec.Type {
	case learnedProducer:
		spec.Parameters["trainInline"] = true
		spec.Parameters["modelDir"] = ""
		maps.Copy(spec.Parameters, producer)
	case profileProducer:
		if name == "llumnix-slo" { // profiled on the fleet it routes, as an operator would
			dir, err := fleetProfiles(o)
			if err != nil {
				return nil, fmt.Errorf("strategy %q: %w", name, err)
			}
			spec.Parameters["ttftProfile"] = filepath.Join(dir, "ttft.json")
			spec.Parameters["tpotProfile"] = filepath.Join(dir, "tpot.json")
			return func() { _ = os.RemoveAll(dir) }, nil
		}
	}
	return func() {}, nil
}
