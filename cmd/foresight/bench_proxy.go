package main

import (
	"time"

	"github.com/foresight-router/foresight/bench"
	"github.com/spf13/cobra"
)

func newBenchProxy() *cobra.Command {
	var (
		o          bench.ProxyOptions
		asJSON     bool
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Measure the TTFT the router adds over going straight to the emulated servers",
		Long: "bench proxy starts --servers emulated vLLM servers and the router of --config in front of them.\n" +
			"For each concurrency in --streams it runs that many clients sending streamed completions of\n" +
			"--max-tokens tokens one after another (at least --requests in all, and 2 per client), first\n" +
			"straight to the servers (round-robin) and then through the router, and reports the TTFT\n" +
			"percentiles of both and their difference. Then it\n" +
			"measures the highest rate of one-token requests the router completes (--rps-workers clients\n" +
			"back to back for --rps-for).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.OutOrStdout(), cpuProfile, asJSON,
				func() (*bench.ProxyResult, error) { return bench.RunProxy(cmd.Context(), o) }, (*bench.ProxyResult).WriteText)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", "examples/pipeline.yaml", "the router's configuration (its endpoints and listeners are replaced)")
	f.IntVar(&o.Servers, "servers", 4, "emulated servers")
	f.StringVar(&o.Streams, "streams", "1,100,1000", "comma-separated numbers of concurrent streams")
	f.IntVar(&o.MaxTokens, "max-tokens", 128, "output tokens of each streamed request: how long a stream lasts (~9 ms per token)")
	f.IntVar(&o.Requests, "requests", 300, "least requests per concurrency and mode (each client sends at least 2)")
	f.IntVar(&o.RPSWorkers, "rps-workers", 64, "clients of the max-rate phase")
	f.DurationVar(&o.RPSFor, "rps-for", 5*time.Second, "length of the max-rate phase")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the CPU profile of this process (router, emulated servers and clients) to this file")
	return cmd
}
