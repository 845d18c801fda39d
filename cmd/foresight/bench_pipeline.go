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
			"through the configured pipeline at the given concurrency, then, in the same run and at the same\n" +
			"concurrency, the same number of cycles as sequential bare round trips to a no-op plugin\n" +
			"carrying the same payload, one per stage: the transport floor.",
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
	f.IntVar(&o.Concurrency, "concurrency", 8, "cycles in flight at once")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the synthetic fleet")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the host's CPU profile to this file (go tool pprof)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
