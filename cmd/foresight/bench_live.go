package main

import (
	"strings"

	"github.com/foresight-router/foresight/bench"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/spf13/cobra"
)

func newBenchLive() *cobra.Command {
	var (
		o      bench.LiveOptions
		asJSON bool
		report string
	)
	cmd := &cobra.Command{
		Use:   "live [--configs a.yaml,b.yaml] [--scenario NAME] [--trace FILE] [--speedup X] [--baselines …]",
		Short: "The real router, live, against client-side references, on the same arrivals",
		Long: "bench live generates one workload, then replays it in real time, open loop, once per router config\n" +
			"and once per baseline, each time against fresh emulated vLLM servers on loopback: through the\n" +
			"config's router, run as `foresight serve --config … --endpoints … --listen … --admin …` from this\n" +
			"binary exactly as a user runs it, or with the client picking the server itself (--baselines\n" +
			"round-robin, least-outstanding). Every run gets the same arrivals. It reports TTFT/TPOT/E2E\n" +
			"percentiles, SLO attainment, errors, the cached-token share, each server's share of the requests\n" +
			"(the router's foresight_endpoint_requests_total) and largest waiting queue, the producer's MAPE\n" +
			"and the router process's CPU time, and the share of the host's CPUs busy. --engine-cpu makes the\n" +
			"servers burn real CPU per token, in a `foresight emulate` process whose CPU is reported too. --load sets\n" +
			"the rate as a fraction of what this host serves: the highest rate the client's round-robin keeps up\n" +
			"with, measured by probes (the simulator's criterion, from the simulator's rate) unless --saturation gives\n" +
			"it; auto:SHARE's cost is then the one that burns SHARE of the CPUs at the simulator's saturation rate.\n" +
			"Table on stderr; --json prints one JSON object on stdout.\n" +
			"Ctrl-C stops every router process and server.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := self("to run the routers")
			if err != nil {
				return err
			}
			o.Binary, o.AtExit, o.Progress = bin, atExit, cmd.ErrOrStderr()
			if (o.Prefill > 0 || o.Decode > 0) && !cmd.Flags().Changed("servers") {
				o.Servers = o.Prefill + o.Decode
			}
			res, err := bench.RunLive(cmd.Context(), o)
			if err != nil {
				return err
			}
			return emitResult(cmd, res, res.WriteText, report, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Configs, "configs", "examples/round-robin.yaml,examples/least-load.yaml,examples/load-prefix-322.yaml,examples/pipeline.yaml",
		"comma-separated router configs (their endpoints and listeners are replaced by flags of serve)")
	f.StringVar(&o.Baselines, "baselines", bench.BaselineRoundRobin+","+bench.BaselineLeastOutstanding,
		"comma-separated client-side references straight to the servers: round-robin, least-outstanding, or none")
	f.StringVar(&o.Scenario, "scenario", "sharegpt", "workload: "+strings.Join(workload.Names(), ", "))
	f.StringVar(&o.Trace, "trace", "", "trace file for azure-conv, azure-code and mooncake")
	f.IntVar(&o.Requests, "requests", 0, "requests to generate (0: the scenario's default; traces: every row), cut at --max-duration")
	f.Float64Var(&o.Rate, "rate", 0, "arrival rate per server in requests/s (0: the scenario's default; traces: their own pace)")
	f.Float64Var(&o.Speedup, "speedup", 1, "divide every arrival time by this factor (replay a trace X times faster)")
	f.Float64Var(&o.Load, "load", 0, "set the rate to this fraction, in (0, 2], of the live saturation rate: the highest rate per server the client's round-robin keeps up with on this host, engines' CPU included (excludes --rate)")
	f.Float64Var(&o.Saturation, "saturation", 0, "with --load: the live saturation rate per server in requests/s (a previous run's), instead of measuring it")
	f.DurationVar(&o.Probe, "probe", bench.DefaultLiveProbe, "with --load: the arrivals' span of each probe measuring the live saturation rate")
	f.StringArrayVar(&o.Classes, "class", nil, "request class NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream], repeatable; requests draw one each (default: no SLO, priority 0, streaming)")
	f.IntVar(&o.Servers, "servers", 4, "emulated servers")
	f.IntVar(&o.Prefill, "prefill", 0, "a prefill/decode disaggregated fleet: this many prefill servers, then --decode decode servers (--servers defaults to their sum); the routers get the roles (serve --roles), client baselines send whole requests to every server")
	f.IntVar(&o.Decode, "decode", 0, "with --prefill: the decode servers")
	f.StringVar(&o.Split, "split", "", "with --prefill and --decode: the routers' disaggregation.split (serve --split; default: the config's, else adaptive)")
	f.IntVar(&o.Replicas, "replicas", 1, "run each config as this many foresight serve replicas, the client spreading requests over them round robin as a gateway does")
	f.StringVar(&o.State, "state", bench.StateNATS, "with --replicas: nats (the replicas share a state plane whose NATS the first embeds) or none (each counts only its own requests)")
	f.BoolVar(&o.KVEvents, "kv-events", false, "the emulated servers publish their KV-cache events and the routers read them (serve --kv-events): prefix matches from what the servers hold, not from what each router sent")
	f.Float64Var(&o.Shared, "shared", 0, "a fleet shared with another client: this fraction of the requests goes straight to the servers, round robin, seen by no router (the run's figures are the rest's; the JSON has the other client's as \"direct\")")
	f.DurationVar(&o.KillPrefill, "kill-prefill", 0, "with --prefill: stop the first prefill server this long into each run, as an engine that dies (servers in the bench's process: not with --engine-cpu)")
	f.StringVar(&o.Preset, "preset", testbed.DefaultPreset, engine.FleetUsage())
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the workload and of the engines' noise")
	f.StringVar(&o.EngineCPU, "engine-cpu", "", "CPU the emulated servers burn, as real engines' front ends do: "+bench.EngineCPUForm)
	f.DurationVar(&o.MaxDuration, "max-duration", bench.DefaultLiveMaxDuration, "cut the workload's arrivals here (each run lasts about this plus the drain)")
	f.DurationVar(&o.Drain, "drain", bench.DefaultLiveDrain, "how long requests in flight after the last arrival may finish before they are cut")
	f.StringVar(&o.RouterLogLevel, "router-log-level", "info", "the routers' --log-level (their access lines, at info, give the added TTFT)")
	f.StringVar(&o.RouterCPUProfiles, "router-cpuprofile", "", "a directory where each router writes its CPU profile (serve --cpuprofile), NAME.pprof for NAME.yaml")
	f.BoolVar(&asJSON, "json", false, "print one JSON object on stdout")
	f.StringVar(&report, "report", "", "write a self-contained HTML report with charts to this file")
	return cmd
}
