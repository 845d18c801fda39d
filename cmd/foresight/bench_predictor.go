package main

import (
	"github.com/foresight-router/foresight/bench"
	"github.com/spf13/cobra"
)

func newBenchPredictor() *cobra.Command {
	var (
		o      bench.PredictorOptions
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "predictor",
		Short: "Measure the producer's training time, prediction latency and accuracy on simulated samples",
		Long: "bench predictor simulates a fleet (the engine model with its step-time noise) under a workload,\n" +
			"routing each request to a random server so that samples span idle to loaded states, and keeps\n" +
			"every finished request's sample. It trains the producer on --rows of them (one core), measures\n" +
			"Produce for cycles of --endpoints endpoints in process, and scores the mean model's MAPE and the\n" +
			"p90 model's coverage on the samples it did not train on.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.OutOrStdout(), "", asJSON,
				func() (*bench.PredictorResult, error) { return bench.RunPredictor(o) }, (*bench.PredictorResult).WriteText)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Scenario, "scenario", "sharegpt", "workload the samples come from")
	f.StringVar(&o.Preset, "preset", "llama-3.1-8b-h100-tp2", "engine preset")
	f.Float64Var(&o.Noise, "noise", 0.05, "relative standard deviation of engine step times")
	f.Float64Var(&o.Rate, "rate", 0, "arrival rate per server in requests/s (0: the scenario's default)")
	f.IntVar(&o.Servers, "servers", 8, "simulated servers")
	f.IntVar(&o.Rows, "rows", 20000, "training rows")
	f.IntVar(&o.Endpoints, "endpoints", 100, "endpoints per predicted cycle")
	f.IntVar(&o.Cycles, "cycles", 2000, "cycles to time Produce on")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the workload, the noise and the routing")
	f.StringVar(&o.Params, "params", "", `producer parameters merged over the defaults, as JSON (e.g. '{"model":{"trees":60}}')`)
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
