package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/report"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// strategyConfigs maps the routing bench's strategies to the example pipelines an operator would
// deploy; "oracle" is the simulator's own.
var strategyConfigs = map[string]string{
	"rr":                "round-robin.yaml",
	"least-load":        "least-load.yaml",
	"load-prefix-111":   "load-prefix-111.yaml",
	"load-prefix-322":   "load-prefix-322.yaml",
	"predicted-latency": "pipeline.yaml",
}

// routingResult is the JSON bench routing prints.
type routingResult struct {
	Scenario   string                   `json:"scenario"`
	Seed       uint64                   `json:"seed"`
	Servers    int                      `json:"servers"`
	Requests   int                      `json:"requests"`
	Preset     string                   `json:"preset"`
	Strategies map[string]strategyStats `json:"strategies"`
	order      []string                 // strategies in the order they were asked for
}

type strategyStats struct {
	*stats.Summary
	// outcomes are kept for the report, not printed.
	outcomes      []stats.Outcome
	PrefixHitRate float64 `json:"prefix_hit_rate"`
	WallSeconds   float64 `json:"wall_s"`
	// Predictor is the producer's own report at the end of the run (pipelines with a producer).
	Predictor *sdk.PredictorStats `json:"predictor,omitempty"`
	// Unavailable says why a strategy could not run (then nothing else is set).
	Unavailable string `json:"unavailable,omitempty"`
}

// unavailable is a strategy that cannot run yet, reported rather than faked.
type unavailable struct{ reason string }

func (u unavailable) Error() string { return u.reason }

type routingOptions struct {
	scenario, strategies, preset, examples, trace, report string
	cpuProfile                                            string
	classes                                               []string
	servers, requests                                     int
	rate, noise                                           float64
	seed                                                  uint64
	asJSON                                                bool
}

func newBenchRouting() *cobra.Command {
	var o routingOptions
	cmd := &cobra.Command{
		Use:   "routing --scenario NAME",
		Short: "Compare routing strategies on the same simulated arrivals",
		Long: "bench routing generates one workload, then runs it through a simulated vLLM fleet once per\n" +
			"strategy: each strategy but the oracle is an example pipeline run through the real host pipeline;\n" +
			"the oracle simulates every candidate forward and takes the true lowest TTFT. It prints a table on\n" +
			"stderr and, with --json, one JSON object on stdout.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stop, err := startCPUProfile(o.cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			res, err := benchRouting(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if o.report != "" {
				if err := writeReport(o.report, res); err != nil {
					return err
				}
			}
			printRoutingTable(cmd.ErrOrStderr(), res)
			if o.asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "C", "workload: "+strings.Join(workload.Names(), ", "))
	f.IntVar(&o.servers, "servers", 8, "simulated servers")
	f.IntVar(&o.requests, "requests", 0, "requests to simulate (0: the scenario's default; traces: every row)")
	f.StringVar(&o.strategies, "strategies", "rr,least-load,load-prefix-111,load-prefix-322,predicted-latency,oracle", "comma-separated strategies")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the workload, the engines' noise and the cycles")
	f.StringVar(&o.preset, "preset", "llama-3.1-8b-h100-tp2", "engine preset: "+strings.Join(engine.Presets(), ", "))
	f.Float64Var(&o.noise, "noise", 0.05, "relative standard deviation of engine step times")
	f.Float64Var(&o.rate, "rate", 0, "arrival rate per server in requests/s (0: the scenario's default)")
	f.StringVar(&o.trace, "trace", "", "trace file for azure-conv, azure-code and mooncake")
	f.StringVar(&o.examples, "examples", "examples", "directory of the strategies' pipeline configs")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object on stdout")
	f.StringVar(&o.report, "report", "", "write a self-contained HTML report with charts to this file")
	f.StringArrayVar(&o.classes, "class", nil, "request class NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream], repeatable; requests draw one each (default: no SLO, priority 0, streaming)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write the host's CPU profile (simulator included) to this file (go tool pprof)")
	return cmd
}

func benchRouting(ctx context.Context, o routingOptions, progress io.Writer) (*routingResult, error) {
	var classes []workload.Class
	for _, s := range o.classes {
		c, err := workload.ParseClass(s)
		if err != nil {
			return nil, fmt.Errorf("--class: %w", err)
		}
		classes = append(classes, c)
	}
	w, err := workload.Scenario(o.scenario, workload.Params{Servers: o.servers, RatePerServer: o.rate,
		Requests: o.requests, Seed: o.seed, TracePath: o.trace, Classes: classes})
	if err != nil {
		return nil, err
	}
	ec, err := engine.Preset(o.preset)
	if err != nil {
		return nil, err
	}
	fleet := cluster.Config{Seed: o.seed}
	for i := range o.servers {
		c := ec
		c.Noise, c.Seed = o.noise, o.seed*1000+uint64(i)
		fleet.Engines = append(fleet.Engines, c)
	}
	res := &routingResult{Scenario: o.scenario, Seed: o.seed, Servers: o.servers, Requests: len(w.Requests),
		Preset: o.preset, Strategies: map[string]strategyStats{}}
	for _, name := range strings.Split(o.strategies, ",") {
		name = strings.TrimSpace(name)
		res.order = append(res.order, name)
		st, err := newStrategy(ctx, name, o.examples)
		var u unavailable
		if errors.As(err, &u) {
			res.Strategies[name] = strategyStats{Unavailable: u.reason}
			continue
		}
		if err != nil {
			return nil, err
		}
		began := time.Now()
		bar := newProgress(progress, len(w.Requests), name)
		fleet.Progress = func() { _ = bar.Add(1) }
		run, err := cluster.Run(fleet, w.Requests, st.router, st.observe)
		_ = bar.Finish()
		var predictor *sdk.PredictorStats
		if st.samples != nil {
			st.samples.Flush(ctx)
			predictor = st.samples.Counts().Stats
		}
		st.close()
		if err != nil {
			return nil, fmt.Errorf("strategy %q: %w", name, err)
		}
		sum := stats.Summarize(run.Outcomes)
		res.Strategies[name] = strategyStats{Summary: &sum, outcomes: run.Outcomes, PrefixHitRate: run.PrefixHitRate(),
			WallSeconds: time.Since(began).Seconds(), Predictor: predictor}
	}
	return res, nil
}

// writeReport writes the HTML report of r to file.
func writeReport(file string, r *routingResult) error {
	in := report.Input{Title: fmt.Sprintf("Routing bench: scenario %s, %d servers (%s), %d requests, seed %d",
		r.Scenario, r.Servers, r.Preset, r.Requests, r.Seed)}
	for _, name := range r.order {
		s := r.Strategies[name]
		st := report.Strategy{Name: name, Outcomes: s.outcomes, Unavailable: s.Unavailable}
		if s.Summary != nil {
			st.Summary = *s.Summary
		}
		in.Strategies = append(in.Strategies, st)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("creating the report: %w", err)
	}
	if err := report.Write(f, in); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// newProgress returns a progress bar on w when w is a terminal, and a silent one otherwise (logs
// and pipes get the table only).
func newProgress(w io.Writer, total int, name string) *progressbar.ProgressBar {
	if f, ok := w.(*os.File); !ok || !isTerminal(f) {
		return progressbar.DefaultSilent(int64(total))
	}
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(fmt.Sprintf("%-18s", name)),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

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
// from live ones: samples batched every second of virtual time or 256 samples (host/feedback).
// For reproducible runs it trains inline (trainInline) and starts cold (no modelDir).
func newStrategy(ctx context.Context, name, examples string) (*strategy, error) {
	if name == "oracle" {
		return &strategy{router: cluster.Oracle{}, close: func() {}}, nil
	}
	file, ok := strategyConfigs[name]
	if !ok {
		return nil, fmt.Errorf("unknown strategy %q (known: rr, least-load, load-prefix-111, load-prefix-322, predicted-latency, oracle)", name)
	}
	cfg, err := config.Load(filepath.Join(examples, file))
	if err != nil {
		return nil, err
	}
	if name == "predicted-latency" && cfg.Pipeline.Producer == nil {
		return nil, unavailable{fmt.Sprintf("%s has no producer", file)}
	}
	if pc := cfg.Pipeline.Producer; pc != nil {
		spec := cfg.Plugin(pc.PluginRef)
		if spec.Parameters == nil {
			spec.Parameters = map[string]any{}
		}
		spec.Parameters["trainInline"] = true
		spec.Parameters["modelDir"] = ""
	}
	p, err := pipeline.Build(ctx, cfg, logger())
	if err != nil {
		return nil, fmt.Errorf("strategy %q: %w", name, err)
	}
	atExit(p.Close)
	st := &strategy{router: cluster.PipelineRouter{Pipeline: p}, close: p.Close}
	if p.HasProducer() {
		st.samples = feedback.New(p.Observe, 0, 0)
		st.observe = func(s sdk.Sample, finished time.Time) { st.samples.Add(ctx, s, finished) }
	}
	return st, nil
}

func printRoutingTable(out io.Writer, r *routingResult) {
	fmt.Fprintf(out, "\nscenario %s, %d servers (%s), %d requests, seed %d\n", r.Scenario, r.Servers, r.Preset, r.Requests, r.Seed)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tTTFT p50\tp95\tp99\tTPOT p50\tp99\tE2E p50\tp95\ttok/s\tSLO att.\tgoodput\tshed\thit rate\twall s\t")
	var missing []string
	for _, name := range sortedKeys(r.Strategies) {
		s := r.Strategies[name]
		if s.Unavailable != "" {
			missing = append(missing, fmt.Sprintf("%s: unavailable: %s", name, s.Unavailable))
			continue
		}
		att := "-"
		if s.SLOAttainment != nil {
			att = fmt.Sprintf("%.3f", *s.SLOAttainment)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t%s\t%.2f\t%.3f\t%.3f\t%.1f\t\n", name,
			s.TTFTMs.P50, s.TTFTMs.P95, s.TTFTMs.P99, s.TPOTMs.P50, s.TPOTMs.P99, s.E2EMs.P50, s.E2EMs.P95,
			s.ThroughputTokS, att, s.GoodputRPS, s.ShedRate, s.PrefixHitRate, s.WallSeconds)
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "(latencies in ms)")
	for _, m := range missing {
		fmt.Fprintln(out, m)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
