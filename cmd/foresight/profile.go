package main

import (
	"fmt"
	"os"
	"time"

	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/profiler"
	"github.com/spf13/cobra"
)

func newProfile() *cobra.Command {
	var (
		preset, out, stamp string
		o                  = profiler.Options{Runs: 10, Noise: 0.05, Seed: 1}
	)
	cmd := &cobra.Command{
		Use:   "profile --preset NAME --out DIR",
		Short: "Measure Llumnix's TTFT and TPOT profiles of a simulated engine",
		Long: "profile measures a simulated engine as Llumnix's profiling runs measure a real one, and writes\n" +
			"DIR/ttft.json (the TTFT of a lone request of 16, 32, … prompt tokens on an idle engine, up to the\n" +
			"step budget) and DIR/tpot.json (the time between output tokens of a batch of B requests of T prompt\n" +
			"tokens decoding together, over a whole grid of B × T), each point with its mean, std, min, max, p50,\n" +
			"p95 and p99 over --runs runs. The files are what the profile-producer plugin reads\n" +
			"(ttftProfile, tpotProfile); their metadata also records the engine's step budget, whether it\n" +
			"prefills in chunks and its KV-cache capacity, which the producer then needs no parameter for.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := engine.Preset(preset)
			if err != nil {
				return err
			}
			p, err := profiler.Run(cfg, preset, o)
			if err != nil {
				return err
			}
			p.Metadata.Timestamp = stamp
			if stamp == "" {
				p.Metadata.Timestamp = time.Now().UTC().Format(time.RFC3339)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			ttft, tpot, err := p.WriteDir(out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d TTFT points (%d–%d tokens), %d TPOT points (batch %d–%d × %d–%d tokens)\n%s\n%s\n",
				preset, len(p.TTFT), p.TTFT[0].TokensNum, p.TTFT[len(p.TTFT)-1].TokensNum, len(p.TPOT),
				p.TPOT[0].BatchSize, p.TPOT[len(p.TPOT)-1].BatchSize, p.TPOT[0].TokensPerRequest,
				p.TPOT[len(p.TPOT)-1].TokensPerRequest, ttft, tpot)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&preset, "preset", "llama-3.1-8b-h100-tp2", "engine preset: "+fmt.Sprint(engine.Presets()))
	f.StringVar(&out, "out", "", "directory to write ttft.json and tpot.json into (created if missing)")
	f.IntVar(&o.Runs, "runs", o.Runs, "runs per point, each with its own noise seed")
	f.Float64Var(&o.Noise, "noise", o.Noise, "relative standard deviation of the batch family's step times")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the first run's noise")
	f.BoolVar(&o.Raw, "raw", false, "keep every sample in its point (Llumnix's raw_data)")
	f.StringVar(&stamp, "timestamp", "", "the metadata's timestamp (default: now); a fixed one makes the files reproducible byte for byte")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
