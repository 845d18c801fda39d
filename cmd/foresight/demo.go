package main

import (
	"context"
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
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// defaultDemoClasses are the demo's request classes when --class is not given. The objectives
// sit inside what the emulated fleet (llama-3.1-8b-h100-tp2, 4 servers) does under ShareGPT at
// its default 2 req/s per server, measured with this demo on the 2-core development machine:
// TTFT p50 ≈ 21 ms, p95 ≈ 33 ms, p99 ≈ 45 ms (a long prompt's prefill, or a prompt arriving during
// another's); TPOT p50 ≈ 9.3 ms, p95 ≈ 9.4 ms (a 7 ms step plus the batch's work), rising to a
// p95 of 10.2 ms at --rate 4 as batches grow. Interactive requests ask for 30 ms TTFT, so about
// one in ten misses (the long prompts, and whoever lands behind one), and 10 ms TPOT, which holds
// until the batches grow; which endpoint a request goes to decides part of that. Batch requests
// are sheddable (priority −1) with a looser 200 ms TTFT, so the admitter may shed them when no
// endpoint is predicted to serve them in time. The emulator runs in real time: on a busy machine
// its steps stretch and both figures rise.
var defaultDemoClasses = []string{
	"interactive:0.8:ttft=30:tpot=10",
	"batch:0.2:ttft=200:priority=-1",
}

// Demo defaults and bounds.
const (
	// demoMaxRequests bounds the workload generated for a run.
	demoMaxRequests = 1_000_000
)

// demoOptions are the demo's flags.
type demoOptions struct {
	config, scenario, preset string
	duration, drain          time.Duration
	servers                  int
	seed                     uint64
	rate                     float64
	classes                  []string
	log                      zerolog.Logger // the router's
}

func newDemo() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [--config FILE] [--scenario NAME] [--duration 60s] [--servers 4]",
		Short: "Run the router in front of an emulated vLLM fleet under a replayed workload, with a live view",
		Long: "demo starts --servers emulated vLLM servers on free loopback ports, the router of --config in\n" +
			"front of them (its endpoints and listeners replaced, the objectives interactive and batch added\n" +
			"if it lacks them), and replays --scenario through the router's\n" +
			"OpenAI API in real time for --duration, with SLO headers and objectives from --class. It shows\n" +
			"per-endpoint load, TTFT/TPOT p50/p95, SLO attainment, shed and error counts and the predictor's\n" +
			"error every second, then a summary. Ctrl-C stops early, prints the summary and stops every\n" +
			"plugin process. The router logs errors only unless --log-level is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.log = logger()
			if f := cmd.Flag("log-level"); f == nil || !f.Changed {
				// The requests cut when the run ends are the router's 499 warnings, dozens of lines
				// over the summary: unless asked, the demo's router logs errors only.
				o.log = o.log.Level(zerolog.ErrorLevel)
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "examples/pipeline.yaml", "router configuration (YAML); its endpoints and listeners are replaced")
	f.StringVar(&o.scenario, "scenario", "sharegpt", "workload: A, B, C, D, sharegpt or production")
	f.DurationVar(&o.duration, "duration", 60*time.Second, "how long to send requests")
	f.DurationVar(&o.drain, "drain", 5*time.Second, "how long requests in flight at the end may finish before they are cut")
	f.IntVar(&o.servers, "servers", 4, "number of emulated servers")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the workload and of the engines' noise")
	f.Float64Var(&o.rate, "rate", 0, "arrival rate per server in requests/s (0: the scenario's default)")
	f.StringVar(&o.preset, "preset", "llama-3.1-8b-h100-tp2", "engine preset: "+strings.Join(engine.Presets(), ", "))
	f.StringArrayVar(&o.classes, "class", nil, "request class NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream], repeatable\n"+
		"(default "+strings.Join(defaultDemoClasses, " and ")+")")
	return cmd
}

// demoScenarios are the scenarios the demo can generate (the trace replays need a trace file).
var demoScenarios = []string{"A", "B", "C", "D", "sharegpt", "production"}

func (o *demoOptions) validate() error {
	switch {
	case o.servers < 1:
		return fmt.Errorf("--servers must be at least 1, got %d", o.servers)
	case o.duration <= 0:
		return fmt.Errorf("--duration must be > 0, got %v", o.duration)
	case o.drain < 0:
		return fmt.Errorf("--drain must be >= 0, got %v", o.drain)
	case o.rate < 0 || math.IsNaN(o.rate) || math.IsInf(o.rate, 0):
		return fmt.Errorf("--rate must be a number of requests/s >= 0, got %v", o.rate)
	case !slices.ContainsFunc(demoScenarios, func(s string) bool { return strings.EqualFold(s, o.scenario) }):
		return fmt.Errorf("--scenario %q: the demo runs one of %s (trace replays need `foresight bench routing --trace`)",
			o.scenario, strings.Join(demoScenarios, ", "))
	}
	return nil
}

// demoClasses parses the --class flags, or the defaults.
func demoClasses(specs []string) ([]workload.Class, error) {
	if len(specs) == 0 {
		specs = defaultDemoClasses
	}
	out := make([]workload.Class, 0, len(specs))
	for _, s := range specs {
		c, err := workload.ParseClass(s)
		if err != nil {
			return nil, fmt.Errorf("--class: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// demoObjectives are the objectives the demo sends, with the priorities examples/pipeline.yaml
// gives them.
var demoObjectives = []config.Objective{
	{Name: loadgen.ObjectiveInteractive, Priority: 1},
	{Name: loadgen.ObjectiveBatch, Priority: -1},
}

// addObjectives declares the demo's objectives the config lacks (only examples/pipeline.yaml
// declares them), so that every example config can run the demo; it returns the names added.
// Without them the router would answer every request 400 (unknown objective).
func addObjectives(cfg *config.Config) []string {
	var added []string
	for _, o := range demoObjectives {
		if _, ok := cfg.Priority(o.Name); !ok {
			cfg.Objectives = append(cfg.Objectives, o)
			added = append(added, fmt.Sprintf("%s (priority %d)", o.Name, o.Priority))
		}
	}
	return added
}

// demoWorkload generates enough of the scenario to last the duration at its rate for the fleet.
// The production ladder is squeezed into the duration (its 8 stages each duration/8 long), so
// the demo shows every load step.
func demoWorkload(o demoOptions, classes []workload.Class) (*workload.Workload, error) {
	p := workload.Params{Servers: o.servers, Seed: o.seed, Classes: classes, RatePerServer: o.rate}
	if strings.EqualFold(o.scenario, "production") {
		p.StageDuration = max(o.duration/8, time.Second)
		return workload.Scenario(o.scenario, p) // Requests 0: one pass over the ladder
	}
	p.Requests = 64
	w, err := workload.Scenario(o.scenario, p)
	if err != nil {
		return nil, err
	}
	// Poisson arrivals: 1.2 × the mean count plus 64 outlasts the duration with near certainty;
	// double until it does.
	p.Requests = int(math.Min(w.Rate*o.duration.Seconds()*1.2+64, demoMaxRequests))
	for {
		if w, err = workload.Scenario(o.scenario, p); err != nil {
			return nil, err
		}
		n := len(w.Requests)
		if n == 0 || w.Requests[n-1].Arrival >= o.duration || p.Requests >= demoMaxRequests {
			return w, nil
		}
		p.Requests = min(2*p.Requests, demoMaxRequests)
	}
}

// runDemo runs the demo until the duration (and drain) ends or Ctrl-C.
func runDemo(ctx context.Context, out io.Writer, o demoOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	classes, err := demoClasses(o.classes)
	if err != nil {
		return err
	}
	cfg, err := config.Load(o.config)
	if err != nil {
		return err
	}
	added := addObjectives(cfg)
	w, err := demoWorkload(o, classes)
	if err != nil {
		return err
	}

	tb, err := testbed.Start(ctx, cfg, testbed.Options{Servers: o.servers, Preset: o.preset, Seed: o.seed, Log: o.log})
	if err != nil {
		return err
	}
	atExit(tb.Close)
	r := tb.Router
	base := "http://" + r.Addr()
	lg, err := loadgen.New(loadgen.Options{BaseURL: base, Model: emulator.DefaultModel, Duration: o.duration, Drain: o.drain})
	if err != nil {
		return err
	}

	info := demoInfo{scenario: w.Name, servers: o.servers, preset: o.preset, rate: w.Rate, duration: o.duration,
		api: r.Addr(), admin: r.AdminAddr(), config: o.config, classes: classes, addedObjectives: added}
	mon := &monitor{endpoints: tb.Endpoints, admin: "http://" + r.AdminAddr(), decisions: r.Server().Decisions,
		client: &http.Client{Timeout: 500 * time.Millisecond}}
	v := newView(out, isTerminal(out), info)
	v.start()

	// Ctrl-C runs the atExit functions, last registered first: this one stops the run and waits
	// (bounded) for the summary, before the router and the fleet stop.
	stopping, finished := make(chan struct{}), make(chan struct{})
	var interrupted atomic.Bool // also set by the normal exit's cleanups, after the summary
	atExit(func() {
		if interrupted.CompareAndSwap(false, true) {
			close(stopping)
		}
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
		}
	})

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
		select {} // the signal handler stops the router and the fleet, then exits 130
	}
	return nil
}
