package main

import (
	"context"

	"github.com/foresight-router/foresight/bench"
	"github.com/spf13/cobra"
)

func newBenchPipeline() *cobra.Command {
	var (
		o          bench.PipelineOptions
		asJSON     bool
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "pipeline --config FILE",
		Short: "Measure decision latency and throughput of a pipeline against the transport floor",
		Long: "bench pipeline runs synthetic cycles (with predictions when the config has no producer)\n" +
			"through the configured pipeline as the router's decider does: in rounds, two under way at\n" +
			"most, each taking up to --round of the --concurrency requests waiting (clients that send\n" +
			"their next request when their decision is back) and deciding them in one RunRoundAfter. Then,\n" +
			"in the same run, it sends the same cycles to a no-op plugin, one round after the other, one\n" +
			"sequential batch call per stage with a round's cycles: the transport floor. --cohorts\n" +
			"decides each cycle with its own Run instead, --concurrency at once, and the floor's calls\n" +
			"carry one cycle each. --pause makes each client wait before its next request, so that the\n" +
			"plugins idle between decisions (the floor's too), as behind a router at low load.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			bin, err := self("for the floor plugin")
			if err != nil {
				return err
			}
			o.FloorPlugin = []string{bin, noopPluginCommand}
			o.Log, o.AtExit = logger(), atExit
			return runBench(cmd.OutOrStdout(), cpuProfile, asJSON,
				func() (*bench.PipelineResult, error) { return bench.RunPipeline(context.Background(), o) },
				(*bench.PipelineResult).WriteText)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", "", "pipeline config (YAML)")
	f.IntVar(&o.Endpoints, "endpoints", 100, "endpoints per cycle")
	f.IntVar(&o.Cycles, "cycles", 20000, "cycles to run")
	f.IntVar(&o.Concurrency, "concurrency", 8, "requests waiting for a decision at once (with --cohorts: cycles in flight)")
	f.IntVar(&o.Round, "round", 0, "most cycles a round takes (0: the router's under a backlog: server.decisionConcurrency, else max(2 × endpoints, 16))")
	f.DurationVar(&o.Pause, "pause", 0, "each client's wait between its decision and its next request: with a pause the plugins idle between decisions, as behind a router at low load (0: none)")
	f.BoolVar(&o.Cohorts, "cohorts", false, "decide each cycle with its own Run, --concurrency at once, gathered into cohorts (the bench before rounds)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the synthetic fleet")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the host's CPU profile to this file (go tool pprof)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
