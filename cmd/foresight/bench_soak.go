package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/foresight-router/foresight/bench/soak"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/spf13/cobra"
)

func newBenchSoak() *cobra.Command {
	var (
		o      soak.Options
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run a long load through the router with plugin kills, freezes and stage swaps, a server cutting streams and a SIGTERM at the end; fail on a lost, wrong or silently cut request, report memory and goroutine slopes",
		Long: "bench soak starts --servers emulated vLLM servers and the router of --config in front of them, as\n" +
			"`foresight serve` from this binary, and sends --rate requests per second for --duration (open loop,\n" +
			"Poisson arrivals, seeded): completions and chat completions, streamed or whole, a stream asking for\n" +
			"its usage or not, each asking for 1 to --max-tokens tokens with a 500 ms TTFT objective. Over the same\n" +
			"time it SIGKILLs a random plugin process every --kill-every (waiting until it serves again with a new\n" +
			"pid), SIGSTOPs one every --stop-every (the router must take it for hung, kill it and serve the plugin\n" +
			"again with a new pid) and swaps the latency scorer of scorers.0 for its other\n" +
			"headroomSelectionStrategy every --swap-every, interleaved in a seeded order. A proxy in front of the\n" +
			"first server ends every --truncate-every-th stream early and cleanly, without data: [DONE]: the router\n" +
			"must move one cut before its first event to another server and end one cut after it with an error\n" +
			"event.\n\n" +
			"Every answer is checked to its end: 200, the tokens asked for, a finish_reason, the usage when asked\n" +
			"(a whole answer always carries it), a stream ending with data: [DONE]. With flow control (a config\n" +
			"enabling flowControl), a 429 or 503 carrying x-foresight-dropped-reason, its llm-d alias and an OpenAI\n" +
			"error is a request shed with a reason, counted by reason. A request without an answer is\n" +
			"lost, one with an answer that is none of these is wrong; each is printed with its x-request-id and\n" +
			"error. Every --sample-every the bench reads the router's VmRSS (/proc) and go_goroutines (its admin\n" +
			"/metrics) and its plugin processes' VmRSS, and reports their least-squares slopes per minute after\n" +
			"--warmup. At the end the increase of the router's foresight_requests_total must equal the requests\n" +
			"sent, and its count under codes other than 200 the failures the client saw. Then the bench sends\n" +
			"--drain streams (half long, half short) and a quarter as many long whole requests, and ends the\n" +
			"router with SIGTERM once every stream has its first event: each must end complete or with the\n" +
			"router's error, and the router must exit within its shutdown grace.\n\n" +
			"The command fails (exit 1), after printing the result, when a request was lost, wrong, silently cut\n" +
			"or not sent, a fault failed, the cut streams are not those the proxy cut, the metrics do not account\n" +
			"for every request, or the drain went wrong.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := self("to run the router")
			if err != nil {
				return err
			}
			o.Binary, o.AtExit = bin, atExit
			var res *soak.Result
			err = runBench(cmd.OutOrStdout(), "", asJSON, func() (*soak.Result, error) {
				var err error
				res, err = soak.Run(cmd.Context(), o)
				return res, err
			}, (*soak.Result).WriteText)
			if err == nil && !res.Pass {
				err = fmt.Errorf("bench soak failed: %s", strings.Join(res.Problems, "; "))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", "examples/pipeline.yaml", "the router's configuration (its endpoints and listeners are replaced)")
	f.IntVar(&o.Servers, "servers", 4, "emulated servers")
	f.StringVar(&o.Preset, "preset", testbed.DefaultPreset, engine.FleetUsage())
	f.Float64Var(&o.Rate, "rate", 100, "requests per second (open loop, Poisson arrivals)")
	f.DurationVar(&o.Duration, "duration", 10*time.Minute, "length of the load")
	f.DurationVar(&o.Warmup, "warmup", time.Minute, "first part of the load left out of the slopes")
	f.DurationVar(&o.SampleEvery, "sample-every", 2*time.Second, "time between two samples of the router's and the plugins' RSS and goroutines")
	f.DurationVar(&o.KillEvery, "kill-every", 30*time.Second, "a SIGKILL of a random plugin process every this long (0: none)")
	f.DurationVar(&o.SwapEvery, "swap-every", 30*time.Second, "a swap of the latency scorer (PUT /admin/stages/scorers.0) every this long (0: none)")
	f.DurationVar(&o.StopEvery, "stop-every", time.Minute, "a SIGSTOP of a random plugin process every this long, which the router must kill and restart (0: none)")
	f.IntVar(&o.TruncateEvery, "truncate-every", 10, "the first server's every N-th stream ends early without data: [DONE] (0: none)")
	f.IntVar(&o.Drain, "drain", 8, "streams in flight (and a quarter as many whole requests) when the router gets SIGTERM at the end (0: none)")
	f.IntVar(&o.MaxTokens, "max-tokens", 16, "longest answer asked for: each request asks for 1 to this many tokens")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the arrivals, the request mix, the fault order, the kill targets and the emulated servers")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
