// Package demo is `foresight demo`: the router of a config in front of emulated vLLM servers
// (sim/testbed), a scenario of sim/workload replayed through its OpenAI API in real time
// (sim/loadgen), and a live view of the fleet, the latencies, the objectives and the predictor
// (view.go), fed by scrapes of the servers' and the router's /metrics (monitor.go).
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/rs/zerolog"
)

// The demo's defaults (and so make run's): an A/B experiment of llm-d's load+prefix scoring
// against the predicted-latency pipeline, on a fleet where two servers of four are twice as slow
// (an H100 pool with older GPUs beside it), every request with a TTFT and a TPOT objective. Load
// and prefix are blind to a server's speed, so about half of the baseline's requests land on a slow
// server, whose TPOT under load is over the objective; the predicted-latency pipeline learns each
// server's TPOT and keeps them off the slow servers while the fast ones can serve them within both
// objectives. On the 2-core development machine, with two busy processes beside it, its verdict
// was significant in every one of ten runs (docs/benchmarks.md, "The demo").
const (
	// DefaultConfig splits the sessions between load-prefix-322 and predicted-latency
	// (profileHandler.experiment).
	DefaultConfig = "examples/demo-ab.yaml"
	// DefaultScenario is ShareGPT-like traffic: Poisson arrivals, 163 prompt and 338 output tokens
	// on average, at its own 2 requests/s per server, about a third of what the mixed fleet serves.
	DefaultScenario = "sharegpt"
	// DefaultPreset is the mixed fleet: the slot engine (32 requests at once, 12 ms between tokens
	// alone, up to twice that as its slots fill), every second server twice as slow.
	DefaultPreset = "sim-8b-h100-32slots,sim-8b-h100-32slots@2"
)

// DefaultClasses are the demo's request classes when Options.Classes is empty (--class is not
// given): every request interactive, with a 1 s TTFT objective (the fleet's TTFT p50 is about
// 0.1 s) and a 25 ms TPOT objective, which the fast servers meet even full (24 ms) and the slow
// ones (24 ms alone, up to 48 ms) do not.
var DefaultClasses = []string{"interactive:1:ttft=1000:tpot=25"}

// demoRates are the demo's rates per server for scenarios whose own default is too light to
// separate strategies. production: its default high stage (5/13 req/s per server, the blog's 13
// servers) gives a 4-server fleet 55 requests a minute, too few for an interval; 16 req/s per
// server in the high stages suits the batch engine (--preset llama-3.1-8b-h100-tp2), at 0.10 of
// the saturation bench routing measures for the ladder (docs/journal/benchmarks-2026-11.md,
// "The A/B demo: its workload and load").
var demoRates = map[string]float64{"production": 16}

// maxRequests bounds the workload generated for a run.
const maxRequests = 1_000_000

// Options are what Run runs: foresight demo's flags.
type Options struct {
	// Config is the router's config file; its endpoints and listeners are replaced, and the
	// objectives interactive and batch added when it lacks them.
	Config string
	// Scenario is the workload: A, B, C, D, sharegpt or production (any case).
	Scenario string
	// Preset is the emulated servers' engine preset ("" is testbed.DefaultPreset).
	Preset string
	// Duration is how long requests are sent, positive; Drain how long those in flight at the end
	// may finish before they are cut, not negative.
	Duration, Drain time.Duration
	// Servers is the number of emulated servers, at least 1.
	Servers int
	// Seed seeds the workload and the engines' noise.
	Seed uint64
	// Rate is the arrival rate per server in requests/s (0: the demo's rate for the scenario,
	// demoRates, else the scenario's default).
	Rate float64
	// Classes are request classes NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream]; none
	// means DefaultClasses.
	Classes []string
	// Log is the router's logger; the zero value logs nothing.
	Log zerolog.Logger
	// TTY says the output is a terminal: the view is redrawn in place every second rather than
	// printed as a line every 5 s.
	TTY bool
	// AtExit, when set, registers with the caller's exit handling, which also runs on SIGINT or
	// SIGTERM: the stop of the router and the servers, then a function that ends the run early and
	// waits (up to 10 s) for its summary. Without it only ctx ends the run early.
	AtExit func(func())
}

// ErrInterrupted is what Run returns when the caller's exit handling (Options.AtExit) ended the
// run: the summary is printed, and that handling is stopping the router and the servers.
var ErrInterrupted = errors.New("the demo was interrupted")

// scenarios are the scenarios the demo can generate (the trace replays need a trace file).
var scenarios = []string{"A", "B", "C", "D", "sharegpt", "production"}

// validate says what is wrong with the options, naming the flags.
func (o *Options) validate() error {
	switch {
	case o.Servers < 1:
		return fmt.Errorf("--servers must be at least 1, got %d", o.Servers)
	case o.Duration <= 0:
		return fmt.Errorf("--duration must be > 0, got %v", o.Duration)
	case o.Drain < 0:
		return fmt.Errorf("--drain must be >= 0, got %v", o.Drain)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("--rate must be a number of requests/s >= 0, got %v", o.Rate)
	case !slices.ContainsFunc(scenarios, func(s string) bool { return strings.EqualFold(s, o.Scenario) }):
		return fmt.Errorf("--scenario %q: the demo runs one of %s (trace replays need `foresight bench routing --trace`)",
			o.Scenario, strings.Join(scenarios, ", "))
	}
	return nil
}

// parseClasses parses the --class flags, or DefaultClasses.
func parseClasses(specs []string) ([]workload.Class, error) {
	if len(specs) == 0 {
		specs = DefaultClasses
	}
	return workload.ParseClasses(specs)
}

// objectives are the objectives the demo sends, with the priorities examples/pipeline.yaml
// gives them.
var objectives = []config.Objective{
	{Name: loadgen.ObjectiveInteractive, Priority: 1},
	{Name: loadgen.ObjectiveBatch, Priority: -1},
}

// addObjectives declares the demo's objectives the config lacks (only examples/pipeline.yaml
// declares them), so that every example config can run the demo; it returns the names added.
// Without them the router would answer every request 400 (unknown objective).
func addObjectives(cfg *config.Config) []string {
	var added []string
	for _, obj := range objectives {
		if _, ok := cfg.Priority(obj.Name); !ok {
			cfg.Objectives = append(cfg.Objectives, obj)
			added = append(added, fmt.Sprintf("%s (priority %d)", obj.Name, obj.Priority))
		}
	}
	return added
}

// generate generates enough of the scenario to last the duration at its rate for the fleet.
// The production ladder is squeezed into the duration (its 8 stages each duration/8 long), so
// the demo shows every load step.
func generate(o Options, classes []workload.Class) (*workload.Workload, error) {
	rate := o.Rate
	if rate == 0 {
		rate = demoRates[strings.ToLower(o.Scenario)]
	}
	p := workload.Params{Servers: o.Servers, Seed: o.Seed, Classes: classes, RatePerServer: rate}
	if strings.EqualFold(o.Scenario, "production") {
		p.StageDuration = max(o.Duration/8, time.Second)
		return workload.Scenario(o.Scenario, p) // Requests 0: one pass over the ladder
	}
	p.Requests = 64
	w, err := workload.Scenario(o.Scenario, p)
	if err != nil {
		return nil, err
	}
	// Poisson arrivals: 1.2 × the mean count plus 64 outlasts the duration with near certainty;
	// double until it does.
	p.Requests = int(math.Min(w.Rate*o.Duration.Seconds()*1.2+64, maxRequests))
	for {
		if w, err = workload.Scenario(o.Scenario, p); err != nil {
			return nil, err
		}
		n := len(w.Requests)
		if n == 0 || w.Requests[n-1].Arrival >= o.Duration || p.Requests >= maxRequests {
			return w, nil
		}
		p.Requests = min(2*p.Requests, maxRequests)
	}
}

// Run runs the demo, printing the view to out, until the duration (and the drain) ends, ctx ends
// or the caller's exit handling interrupts it (then it returns ErrInterrupted); either way it
// prints the summary of the run. It stops the router and the servers before it returns.
func Run(ctx context.Context, out io.Writer, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	classes, err := parseClasses(o.Classes)
	if err != nil {
		return err
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return err
	}
	added := addObjectives(cfg)
	if cfg.State == nil { // another `foresight serve` can join the demo's router as a replica
		cfg.State = config.EmbeddedState("demo")
	}
	w, err := generate(o, classes)
	if err != nil {
		return err
	}

	tb, err := testbed.Start(ctx, cfg, testbed.Options{Servers: o.Servers, Preset: o.Preset, Seed: o.Seed, Log: o.Log})
	if err != nil {
		return err
	}
	defer tb.Close()
	if o.AtExit != nil {
		o.AtExit(tb.Close)
	}
	r := tb.Router
	base := "http://" + r.Addr()
	lg, err := loadgen.New(loadgen.Options{BaseURL: base, Model: emulator.DefaultModel, Duration: o.Duration, Drain: o.Drain})
	if err != nil {
		return err
	}

	info := runInfo{scenario: w.Name, servers: o.Servers, preset: o.Preset, rate: w.Rate, duration: o.Duration,
		api: r.Addr(), admin: r.AdminAddr(), config: o.Config, classes: classes, addedObjectives: added, nats: r.StateURL()}
	for _, e := range tb.Endpoints {
		info.endpoints = append(info.endpoints, fmt.Sprintf("{id: %s, address: %s}", e.ID, e.Addr))
	}
	mon := &monitor{endpoints: tb.Endpoints, admin: "http://" + r.AdminAddr(), decisions: r.Server().Decisions,
		experiments: r.Experiments, client: &http.Client{Timeout: 500 * time.Millisecond}}
	v := newView(out, o.TTY, info)
	v.start()

	// Ctrl-C runs the AtExit functions, last registered first: this one stops the run and waits
	// (bounded) for the summary, before the router and the fleet stop.
	stopping, finished := make(chan struct{}), make(chan struct{})
	var interrupted atomic.Bool // also set by the normal exit's cleanups, after the summary
	if o.AtExit != nil {
		o.AtExit(func() {
			if interrupted.CompareAndSwap(false, true) {
				close(stopping)
			}
			select {
			case <-finished:
			case <-time.After(10 * time.Second):
			}
		})
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runDone := make(chan loadgen.Snapshot, 1)
	started := time.Now()
	go func() { runDone <- lg.Run(runCtx, w.Requests) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var final loadgen.Snapshot
loop:
	for {
		select {
		case final = <-runDone:
			break loop
		case <-stopping:
			cancel()
			final = <-runDone
			break loop
		case <-tick.C:
			v.update(lg.Snapshot(), mon.scrape(ctx))
		}
	}
	stop := interrupted.Load()
	v.summary(final, mon.scrape(ctx), time.Since(started), stop)
	close(finished)
	if stop {
		return ErrInterrupted
	}
	return nil
}
