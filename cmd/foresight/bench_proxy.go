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
		Long: "bench proxy starts --servers emulated vLLM servers and the router of --config in front of them,\n" +
			"as `foresight serve` from this binary. For each concurrency in --streams it runs that many\n" +
			"clients sending streamed completions of --max-tokens tokens one after another (at least\n" +
			"--requests in all, and 2 per client), first straight to the servers (round-robin) and then\n" +
			"through the router, and reports the TTFT percentiles of both, their difference and the router\n" +
			"process's CPU time per routed request. Prompts are a few words, or with --trace the prompt\n" +
			"lengths of a trace's rows. Then it measures the highest rate of one-token requests the router\n" +
			"completes (--rps-workers clients back to back for --rps-for).\n\n" +
			"--reference nginx also starts nginx (on PATH or in /usr/sbin) with a generated config as a\n" +
			"streaming reverse proxy in front of the same servers (least_conn, no buffering, kept-alive\n" +
			"upstream connections, one worker per core; its files in a temp dir) and sends it the same\n" +
			"requests between the direct ones and the router's; both proxies then get them again with\n" +
			"20-token answers. A table puts them side by side: CPU ms per request of each one's process\n" +
			"tree (nginx's workers, the router's plugins), µs per relayed token, the fixed ms per request,\n" +
			"the TTFT added against the direct path paired per request, and the router's over nginx's.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := self("to run the router")
			if err != nil {
				return err
			}
			o.Binary = bin
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
	f.StringVar(&o.Trace, "trace", "", "take the prompts' lengths from this trace's rows (Azure 2023 CSV, or Mooncake JSONL ending in .jsonl)")
	f.StringVar(&o.RouterCPUProfile, "router-cpuprofile", "", "write the router process's CPU profile to this file (serve --cpuprofile)")
	f.StringVar(&o.Reference, "reference", "", "measure this proxy beside the router in front of the same servers: nginx (needs nginx installed)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the CPU profile of this process (emulated servers and clients) to this file")
	return cmd
}
