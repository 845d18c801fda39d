package main

import (
	"fmt"
	"time"

	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/spf13/cobra"
)

func newEmulate() *cobra.Command {
	var (
		servers, basePort     int
		preset, engineCPU     string
		seed                  uint64
		kvLatency, kvPerToken time.Duration
		kvEventsPort, blocks  int
	)
	cmd := &cobra.Command{
		Use:   "emulate --servers N --base-port P",
		Short: "Run N emulated vLLM servers on 127.0.0.1 (OpenAI API, SSE, vLLM metrics) until interrupted",
		Long: "emulate serves N real-time engine models on 127.0.0.1:P … P+N−1 (P = 0 picks free ports):\n" +
			"/v1/completions and /v1/chat/completions (streaming with usage and cached_tokens, and not),\n" +
			"/v1/models, /health and /metrics with vLLM's metric names. Stop it with Ctrl-C.\n\n" +
			"Every server serves both halves of prefill/decode disaggregation as vLLM's NIXL connector\n" +
			"does (llm-d-inference-sim's protocol): a request with kv_transfer_params.do_remote_decode is\n" +
			"a prefill, answered with the kv_transfer_params naming this server and finish_reason\n" +
			"remote_decode; one with do_remote_prefill and the prefill's remote_engine_id, remote_host and\n" +
			"remote_port is a decode, which pulls the prompt's KV (the transfer cost below) instead of\n" +
			"computing it.",
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
			for _, d := range []struct {
				flag   string
				v      time.Duration
				option func(time.Duration) emulator.Option
			}{
				{"kv-cache-transfer-latency", kvLatency, emulator.WithKVTransferLatency},
				{"kv-cache-transfer-time-per-token", kvPerToken, emulator.WithKVTransferPerToken},
			} {
				if !cmd.Flags().Changed(d.flag) {
					continue
				}
				if d.v < 0 {
					return fmt.Errorf("--%s must be a duration of at least 0, got %v", d.flag, d.v)
				}
				opts = append(opts, d.option(d.v))
			}
			if cmd.Flags().Changed("kv-cache-blocks") {
				if blocks < 2 {
					return fmt.Errorf("--kv-cache-blocks must be at least 2, got %d", blocks)
				}
				opts = append(opts, emulator.WithKVCacheBlocks(blocks))
			}
			if cmd.Flags().Changed("kv-events-port") {
				if kvEventsPort < 0 || kvEventsPort > 0 && kvEventsPort+2*servers-1 > 65535 {
					return fmt.Errorf("--kv-events-port must be 0 (free ports) or leave room for %d ports below 65536, got %d", 2*servers, kvEventsPort)
				}
				opts = append(opts, emulator.WithKVEvents(kvEventsPort))
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
	f.IntVar(&kvEventsPort, "kv-events-port", 0, "publish each server's KV-cache events as vLLM does (ZeroMQ, msgpack): server i on tcp://127.0.0.1:P+2i, its replay socket on P+2i+1 (0: free ports; printed after each server's address); unset: none")
	f.IntVar(&blocks, "kv-cache-blocks", 0, "each server's KV cache in blocks of 16 tokens, in place of the preset's (a small cache evicts soon)")
	f.StringVar(&engineCPU, "engine-cpu", "", "CPU each server burns per token, as a real engine front end does: "+emulator.CPUCostForm)
	f.DurationVar(&kvLatency, "kv-cache-transfer-latency", 0,
		"fixed part of a decode request's KV transfer from its prefill server, e.g. 1ms (default: the preset's; batch presets 1ms, slot presets 0)")
	f.DurationVar(&kvPerToken, "kv-cache-transfer-time-per-token", 0,
		"KV transfer time per prompt token pulled, e.g. 10us (default: the preset's; batch presets 10.486µs, 100 Gb/s; slot presets 3µs or 8µs). "+
			"Batch engines pull the tokens their prefix cache lacks and add the latency; slot engines, as llm-d-inference-sim, "+
			"take the latency when it is set, else this × every prompt token")
	return cmd
}
