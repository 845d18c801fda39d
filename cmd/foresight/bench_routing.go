package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/foresight-router/foresight/bench"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/spf13/cobra"
)

func newBenchRouting() *cobra.Command {
	var (
		lo                 bench.LadderOptions
		o                  = &lo.RoutingOptions
		asJSON             bool
		report, cpuProfile string
		matrix, outcomes   string
	)
	cmd := &cobra.Command{
		Use:   "routing --scenario NAME",
		Short: "Compare routing strategies on the same simulated arrivals",
		Long: "bench routing generates one workload, then runs it through a simulated vLLM fleet once per\n" +
			"strategy: each strategy but the oracle is an example pipeline run through the real host pipeline;\n" +
			"the oracle simulates every candidate forward and takes the true lowest TTFT. It prints a table on\n" +
			"stderr and, with --json, one JSON object on stdout.\n\n" +
			"With --load L1,L2,… (the load ladder) it first measures the fleet's saturation rate — the highest\n" +
			"rate at which round-robin keeps up with the workload (bisection on runs of evenly spaced arrivals;\n" +
			"docs/benchmarks.md) — unless --saturation gives it, then runs every strategy at each load ×\n" +
			"saturation: Poisson scenarios generated at that rate, trace replays and the production ladder\n" +
			"time-scaled to it (production: its high stages). It prints each load's table with the\n" +
			"predictor's and the oracle's difference from the best heuristic, then a summary across loads;\n" +
			"--json gives {saturation, loads, summary}; --report charts TTFT per strategy against load\n" +
			"(without the per-load charts of a single run).\n\n" +
			"With --matrix admission it runs seed 004's predictive-admission isolation matrix instead: five\n" +
			"admission configs (examples/load-prefix-322.yaml, examples/admission/*.yaml, examples/round-robin.yaml)\n" +
			"and the prefix group floor's rows, on a mixed-SLO shared-prefix workload at --load (one value,\n" +
			"default 1.2) × the measured saturation rate, 3 seeds from --seed (docs/benchmarks.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			if isTerminal(cmd.ErrOrStderr()) {
				o.Progress = cmd.ErrOrStderr()
			}
			o.Log, o.AtExit = logger(), atExit
			if (o.Prefill > 0 || o.Decode > 0) && !cmd.Flags().Changed("servers") {
				o.Servers = o.Prefill + o.Decode
			}
			if matrix != "" {
				return runMatrix(cmd, matrix, lo, asJSON)
			}
			if len(lo.Loads) > 0 {
				return runLadder(cmd, lo, report, outcomes, asJSON)
			}
			if lo.Saturation != 0 {
				return fmt.Errorf("--saturation sets the rate the loads of --load are fractions of: give --load too")
			}
			res, err := bench.RunRouting(cmd.Context(), *o)
			if err != nil {
				return err
			}
			if outcomes != "" {
				if err := wroteOutcomes(cmd, outcomes)(res.WriteOutcomes(outcomes, "")); err != nil {
					return err
				}
			}
			return emitResult(cmd, res, noError(res.WriteTable), report, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Scenario, "scenario", "C", "workload: "+strings.Join(workload.Names(), ", "))
	f.IntVar(&o.Servers, "servers", 8, "simulated servers")
	f.IntVar(&o.Requests, "requests", 0, "requests to simulate (0: the scenario's default; traces: every row)")
	f.StringVar(&o.Strategies, "strategies", "rr,least-load,load-prefix-111,load-prefix-322,predicted-latency,oracle", "comma-separated strategies; FILE.yaml names a pipeline config of your own")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the workload, the engines' noise and the cycles")
	f.StringVar(&o.Preset, "preset", "llama-3.1-8b-h100-tp2", engine.FleetUsage())
	f.Float64Var(&o.Noise, "noise", bench.DefaultNoise, "relative standard deviation of engine step times")
	f.Float64Var(&o.Rate, "rate", 0, "arrival rate per server in requests/s (0: the scenario's default)")
	f.StringVar(&o.Trace, "trace", "", "trace file for azure-conv, azure-code and mooncake")
	f.StringVar(&o.Examples, "examples", "examples", "directory of the strategies' pipeline configs")
	f.BoolVar(&asJSON, "json", false, "print one JSON object on stdout")
	f.StringVar(&report, "report", "", "write a self-contained HTML report with charts to this file (with --load: TTFT against load)")
	f.StringArrayVar(&o.Classes, "class", nil, "request class NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream], repeatable; requests draw one each (default: no SLO, priority 0, streaming)")
	f.Float64SliceVar(&lo.Loads, "load", nil, "run the load ladder at these fractions of the measured saturation rate, each in (0, 2], e.g. 0.5,0.7,0.85,0.95 (excludes --rate)")
	f.Float64Var(&lo.Saturation, "saturation", 0, "with --load: the fleet's saturation rate in requests/s, instead of measuring it")
	f.IntVar(&o.Prefill, "prefill", 0, "a prefill/decode disaggregated fleet: this many prefill servers, then --decode decode servers (--servers defaults to their sum)")
	f.IntVar(&o.Decode, "decode", 0, "with --prefill: the decode servers")
	f.StringVar(&o.Split, "split", "", "with --prefill and --decode: when a request is split, adaptive (the default), always or never (docs/configuration.md, disaggregation.split)")
	f.IntVar(&o.Replicas, "replicas", 1, "router replicas the arrivals are spread over, each with its own pipeline, in-flight view and prefix index (as behind a gateway)")
	f.StringVar(&o.Assign, "assign", "random", "how the gateway spreads arrivals over the replicas: random, or session (a session's requests to one replica)")
	f.BoolVar(&o.Alone, "alone", false, "with --replicas: each replica's producer learns from its own requests only (default: they share samples, through NATS with --state nats, else through a temporary directory)")
	f.StringVar(&o.State, "state", bench.StateNATS, "with --replicas: nats (the replicas share their requests in flight and prefix records through a state plane on an embedded NATS server) or none (each counts only its own)")
	f.DurationVar(&o.PublishDelay, "publish-delay", bench.DefaultPublishDelay, "with --state nats: a replica's event reaches its peers this long after it happened (the live plane's batching and propagation)")
	f.StringVar(&o.Prefix, "prefix", bench.PrefixRouter, "where the routers' prefix matches come from: router (each router's own record of what it sent where), events (the engines' KV-cache events) or both (each strategy twice, the events' run named NAME@events)")
	f.Float64Var(&o.Shared, "shared", 0, "a fleet shared with another client: this fraction of the requests goes straight to a random server, seen by no router (the table's figures are the routed requests'; the JSON has the direct ones' as \"direct\")")
	f.StringVar(&matrix, "matrix", "", "run a matrix of configs instead of --strategies: admission (seed 004's isolation matrix; takes --servers, --requests, --seed, --preset, --noise, --examples, --class, --saturation and one --load)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the host's CPU profile (simulator included) to this file (go tool pprof)")
	f.StringVar(&outcomes, "outcomes", "", "write every request's outcome into this directory: one JSON line per request, a file per strategy (and load)")
	return cmd
}

// runLadder runs bench routing --load and prints its results.
func runLadder(cmd *cobra.Command, o bench.LadderOptions, report, outcomes string, asJSON bool) error {
	res, err := bench.RunLadder(cmd.Context(), o)
	if err != nil {
		return err
	}
	if outcomes != "" {
		if err := wroteOutcomes(cmd, outcomes)(res.WriteOutcomes(outcomes)); err != nil {
			return err
		}
	}
	return emitResult(cmd, res, noError(res.WriteTable), report, asJSON)
}

// wroteOutcomes reports on stderr what a WriteOutcomes into dir wrote, and passes its error on.
func wroteOutcomes(cmd *cobra.Command, dir string) func([]string, error) error {
	return func(paths []string, err error) error {
		if err != nil {
			return fmt.Errorf("--outcomes: %w", err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d outcome files into %s\n", len(paths), dir)
		return nil
	}
}

// runMatrix runs bench routing --matrix and prints its results; the flags that choose a workload
// or strategies do not apply, since the matrix has its own.
func runMatrix(cmd *cobra.Command, matrix string, lo bench.LadderOptions, asJSON bool) error {
	for _, name := range []string{"scenario", "strategies", "rate", "trace", "report", "replicas", "assign", "alone", "outcomes"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--matrix runs its own workload and configs: --%s does not apply", name)
		}
	}
	if len(lo.Loads) > 1 {
		return fmt.Errorf("--matrix runs at one load: give --load one fraction of the saturation rate, got %d", len(lo.Loads))
	}
	o := lo.RoutingOptions
	mo := bench.MatrixOptions{Matrix: matrix, Examples: o.Examples, Preset: o.Preset, Servers: o.Servers, Noise: o.Noise,
		Requests: o.Requests, Seed: o.Seed, Saturation: lo.Saturation, Classes: o.Classes, Progress: o.Progress, Log: o.Log, AtExit: o.AtExit}
	if len(lo.Loads) == 1 {
		mo.Load = lo.Loads[0]
	}
	res, err := bench.RunMatrix(cmd.Context(), mo)
	if err != nil {
		return err
	}
	res.WriteTable(cmd.ErrOrStderr())
	if asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	return nil
}

// noError adapts a table writer that cannot fail to emitResult.
func noError(write func(io.Writer)) func(io.Writer) error {
	return func(w io.Writer) error { write(w); return nil }
}
