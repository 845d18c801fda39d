package main

import (
	"errors"
	"strings"
	"time"

	"github.com/foresight-router/foresight/demo"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newDemo() *cobra.Command {
	var o demo.Options
	cmd := &cobra.Command{
		Use:   "demo [--config FILE] [--scenario NAME] [--duration 60s] [--servers 4]",
		Short: "Run the router in front of an emulated vLLM fleet under a replayed workload, with a live view",
		Long: "demo starts --servers emulated vLLM servers on free loopback ports, the router of --config in\n" +
			"front of them (its endpoints and listeners replaced, the objectives interactive and batch added\n" +
			"if it lacks them), and replays --scenario through the router's\n" +
			"OpenAI API in real time for --duration, with SLO headers and objectives from --class. It shows\n" +
			"per-endpoint load, TTFT/TPOT p50/p95, SLO attainment, shed and error counts and the predictor's\n" +
			"error every second, then a summary. When the config runs an experiment (by default an A/B of\n" +
			"load-prefix-322 against the predicted-latency pipeline, split by session, on a fleet where\n" +
			"every second server is twice as slow) it shows each arm's\n" +
			"figures with the 95% intervals of the differences, and the summary ends with the verdict.\n" +
			"Ctrl-C stops early, prints the summary and stops every plugin process. The router logs errors\n" +
			"only unless --log-level is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = logger()
			if f := cmd.Flag("log-level"); f == nil || !f.Changed {
				// The requests cut when the run ends are the router's 499 warnings, dozens of lines
				// over the summary: unless asked, the demo's router logs errors only.
				o.Log = o.Log.Level(zerolog.ErrorLevel)
			}
			o.TTY, o.AtExit = isTerminal(cmd.OutOrStdout()), atExit
			err := demo.Run(cmd.Context(), cmd.OutOrStdout(), o)
			if errors.Is(err, demo.ErrInterrupted) {
				select {} // the signal handler stops the router and the fleet, then exits 130
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", demo.DefaultConfig, "router configuration (YAML); its endpoints and listeners are replaced")
	f.StringVar(&o.Scenario, "scenario", demo.DefaultScenario, "workload: A, B, C, D, sharegpt or production")
	f.DurationVar(&o.Duration, "duration", 60*time.Second, "how long to send requests")
	f.DurationVar(&o.Drain, "drain", 5*time.Second, "how long requests in flight at the end may finish before they are cut")
	f.IntVar(&o.Servers, "servers", 4, "number of emulated servers")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the workload and of the engines' noise")
	f.Float64Var(&o.Rate, "rate", 0, "arrival rate per server in requests/s (0: 16 for production, the high stages' rate; the scenario's default otherwise)")
	f.StringVar(&o.Preset, "preset", demo.DefaultPreset, engine.FleetUsage())
	f.StringArrayVar(&o.Classes, "class", nil, "request class NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream], repeatable\n"+
		"(default "+strings.Join(demo.DefaultClasses, " and ")+")")
	return cmd
}
