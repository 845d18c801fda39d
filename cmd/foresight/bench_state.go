package main

import (
	"time"

	"github.com/foresight-router/foresight/bench"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/spf13/cobra"
)

func newBenchState() *cobra.Command {
	var (
		o          bench.StateOptions
		asJSON     bool
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Measure the state plane's CPU per request and its propagation between replicas",
		Long: "bench state runs --replicas router accounts (each a router's in-flight ledger and prefix index) in\n" +
			"this process, dispatching their share of --rate requests/s for --duration: each request's prompt\n" +
			"of --prompt-blocks prefix blocks to one of --endpoints endpoints, its first token --first-token\n" +
			"later, its end (with --answer-blocks blocks) --finish later. It runs the load twice, the\n" +
			"replicas alone and then sharing a state plane over NATS (embedded in this process unless --nats),\n" +
			"and reports the process's CPU per request both times, their difference (the plane's cost over\n" +
			"every replica and the server), and how old the peers' messages were when they arrived.\n\n" +
			"With --partition D it instead stops the embedded server 2 s into the load for D and starts it\n" +
			"again on the same address, and reports how soon every replica counted only its own requests\n" +
			"and how soon, once the server was back, every replica's counts were the fleet's again.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Partition > 0 {
				return runBench(cmd.OutOrStdout(), cpuProfile, asJSON,
					func() (*bench.PartitionResult, error) { return bench.RunStatePartition(o) }, (*bench.PartitionResult).WriteText)
			}
			return runBench(cmd.OutOrStdout(), cpuProfile, asJSON,
				func() (*bench.StateResult, error) { return bench.RunState(o) }, (*bench.StateResult).WriteText)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Replicas, "replicas", 4, "router replicas sharing the plane")
	f.Float64Var(&o.Rate, "rate", 1000, "requests/s over the fleet, spread evenly over the replicas")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "how long requests are dispatched")
	f.IntVar(&o.Endpoints, "endpoints", 8, "endpoints the requests go to (at random)")
	f.IntVar(&o.PromptBlocks, "prompt-blocks", 64, "prefix blocks of a request's prompt (16 tokens a block)")
	f.IntVar(&o.AnswerBlocks, "answer-blocks", 8, "prefix blocks of a request's answer")
	f.DurationVar(&o.FirstToken, "first-token", 100*time.Millisecond, "a request's first token, after its dispatch")
	f.DurationVar(&o.Finish, "finish", 2*time.Second, "a request's end, after its dispatch")
	f.DurationVar(&o.PublishInterval, "publish-interval", stateplane.DefaultPublishInterval, "the planes' state.publishInterval")
	f.DurationVar(&o.SnapshotInterval, "snapshot-interval", stateplane.DefaultSnapshotInterval, "the planes' state.snapshotInterval")
	f.DurationVar(&o.Partition, "partition", 0, "instead: stop the embedded NATS server 2 s in for this long, and measure how soon the replicas forget their peers and converge after it returns (the run lasts at least this + 6 s)")
	f.StringVar(&o.URL, "nats", "", "an external NATS server's URL (default: one embedded in this process)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write this process's CPU profile to this file")
	return cmd
}
