package main

import (
	"time"

	"github.com/foresight-router/foresight/bench/faults"
	"github.com/spf13/cobra"
)

func newBenchFaults() *cobra.Command {
	var (
		o          faults.Options
		asJSON     bool
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "faults",
		Short: "Measure requests through the router while its plugins are swapped, killed and badly reloaded",
		Long: "bench faults starts --servers emulated vLLM servers and the router of --config in front of them\n" +
			"(its endpoints and listeners replaced by the fleet and 127.0.0.1:0), and sends an open-loop load of\n" +
			"--rate streamed completions per second (Poisson arrivals, seeded; 8 tokens each, a 500 ms TTFT\n" +
			"objective; at most 2,000 in flight, more count as failed). The first --baseline of load runs\n" +
			"without faults; during the following --duration the bench performs, spread evenly over the window\n" +
			"and interleaved: --swaps PUT /admin/stages/scorers.0 alternating the latency scorer's\n" +
			"headroomSelectionStrategy between \"most\" and \"least\"; --kills SIGKILLs of a random plugin process,\n" +
			"each waited for until the plugin serves again with a new pid; and --bad-reloads POST /admin/reload\n" +
			"of an invalid config file (in turn: broken YAML, a missing plugin binary, an unknown parameter of\n" +
			"the scorer), each of which must answer 422 and leave the pipeline's generation unchanged, before\n" +
			"the valid file is restored.\n\n" +
			"The router reloads from its config file, and the bench must not touch yours: it serves a copy\n" +
			"written beside it (.faultbench-<pid>.yaml in the config's directory, so that relative plugin\n" +
			"paths and parameters resolve as in the original), which it removes when it ends. The config's\n" +
			"directory must therefore be writable.\n\n" +
			"A request succeeds when it answers 200 and its stream ends with data: [DONE]; TTFT is the time to\n" +
			"its first data event. Failed requests are counted by reason, never retried; the result is printed\n" +
			"whatever they are, and only a failed setup makes the command fail.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log, o.AtExit = logger(), atExit
			return runBench(cmd.OutOrStdout(), cpuProfile, asJSON,
				func() (*faults.Result, error) { return faults.Run(cmd.Context(), o) }, (*faults.Result).WriteText)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", "examples/pipeline.yaml", "the router's configuration (its endpoints and listeners are replaced; a copy beside it is served)")
	f.IntVar(&o.Servers, "servers", 4, "emulated servers")
	f.Float64Var(&o.Rate, "rate", 200, "requests per second (open loop, Poisson arrivals)")
	f.DurationVar(&o.Duration, "duration", 30*time.Second, "length of the fault window")
	f.DurationVar(&o.Baseline, "baseline", 10*time.Second, "length of the window of load without faults before it")
	f.IntVar(&o.Swaps, "swaps", 20, "scorer swaps (PUT /admin/stages/scorers.0) in the fault window")
	f.IntVar(&o.Kills, "kills", 5, "SIGKILLs of a random plugin process in the fault window")
	f.IntVar(&o.BadReloads, "bad-reloads", 3, "reloads of an invalid config file in the fault window")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the arrivals, the fault order, the kill targets and the emulated servers")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the CPU profile of this process (router, emulated servers and clients) to this file")
	return cmd
}
