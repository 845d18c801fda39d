package main

import (
	"fmt"

	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/spf13/cobra"
)

func newEmulate() *cobra.Command {
	var (
		servers, basePort int
		preset, engineCPU string
		seed              uint64
	)
	cmd := &cobra.Command{
		Use:   "emulate --servers N --base-port P",
		Short: "Run N emulated vLLM servers on 127.0.0.1 (OpenAI API, SSE, vLLM metrics) until interrupted",
		Long: "emulate serves N real-time engine models on 127.0.0.1:P … P+N−1 (P = 0 picks free ports):\n" +
			"/v1/completions and /v1/chat/completions (streaming with usage and cached_tokens, and not),\n" +
			"/v1/models, /health and /metrics with vLLM's metric names. Stop it with Ctrl-C.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if servers < 1 {
				return fmt.Errorf("--servers must be at least 1, got %d", servers)
			}
			var opts []emulator.Option
			if engineCPU != "" {
				cost, err := emulator.ParseCPUCost(engineCPU)
				if err != nil {
					return fmt.Errorf("--engine-cpu: %w", err)
				}
				opts = append(opts, emulator.WithCPUCost(cost))
			}
			f, err := emulator.Start(servers, basePort, preset, seed, opts...)
			if err != nil {
				return err
			}
			atExit(f.Close)
			fmt.Fprintf(cmd.OutOrStdout(), "%d emulated vLLM servers (%s):\n", servers, preset)
			if err := f.WriteAddrs(cmd.OutOrStdout()); err != nil {
				return err
			}
			select {} // until SIGINT/SIGTERM, which stops the servers
		},
	}
	f := cmd.Flags()
	f.IntVar(&servers, "servers", 4, "number of servers")
	f.IntVar(&basePort, "base-port", 8000, "port of the first server (0: free ports)")
	f.StringVar(&preset, "preset", "llama-3.1-8b-h100-tp2", engine.FleetUsage())
	f.Uint64Var(&seed, "seed", 1, "seed of the engines' step-time noise")
	f.StringVar(&engineCPU, "engine-cpu", "", "CPU each server burns per token, as a real engine front end does: "+emulator.CPUCostForm)
	return cmd
}
