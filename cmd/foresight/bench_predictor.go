package main

import (
	"github.com/foresight-router/foresight/bench"
	"github.com/foresight-router/foresight/sim/engine"
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
			"p90 model's coverage on the samples it did not train on.\n\n" +
			"With --online L it also runs the predicted-latency pipeline (examples/pipeline.yaml) on the\n" +
			"scenario at load L (a fraction of the saturation rate, measured as bench routing --load does\n" +
			"unless --saturation gives it), the producer learning from its first request as behind a router,\n" +
			"and scores the predictions made for the chosen servers: TTFT MAPE over requests [0,100),\n" +
			"[100,300), [300,1000) and from 1000 on, the mean predicted/actual TTFT of the longest tenth,\n" +
			"and the TPOT MAPE.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.OutOrStdout(), "", asJSON,
				func() (*bench.PredictorResult, error) { return bench.RunPredictor(o) }, (*bench.PredictorResult).WriteText)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Scenario, "scenario", "sharegpt", "workload the samples come from")
	f.StringVar(&o.Preset, "preset", "llama-3.1-8b-h100-tp2", engine.FleetUsage())
	f.Float64Var(&o.Noise, "noise", bench.DefaultNoise, "relative standard deviation of engine step times")
	f.Float64Var(&o.Rate, "rate", 0, "arrival rate per server in requests/s (0: the scenario's default)")
	f.IntVar(&o.Servers, "servers", 8, "simulated servers")
	f.IntVar(&o.Rows, "rows", 20000, "training rows")
	f.IntVar(&o.Endpoints, "endpoints", 100, "endpoints per predicted cycle")
	f.IntVar(&o.Cycles, "cycles", 2000, "cycles to time Produce on")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the workload, the noise and the routing")
	f.StringVar(&o.Params, "params", "", `producer parameters merged over the defaults, as JSON (e.g. '{"model":{"trees":60}}')`)
	f.Float64Var(&o.OnlineLoad, "online", 0, "also score the producer online, routing with examples/pipeline.yaml at this fraction of the saturation rate (0: off)")
	f.Float64Var(&o.Saturation, "saturation", 0, "with --online: the fleet's saturation rate in requests/s, instead of measuring it")
	f.StringVar(&o.Examples, "examples", "examples", "with --online: directory of the example pipeline configs")
	f.StringVar(&o.Trace, "trace", "", "trace file for azure-conv, azure-code and mooncake")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
