package profiler

import (
	"bytes"
	"os"
	"testing"

	"github.com/foresight-router/foresight/internal/profile"
	"github.com/foresight-router/foresight/sim/engine"
)

// TestProfilesReadBack: the profiles of both families parse strictly and predict what the engine
// does; the same seed gives the same files.
func TestProfilesReadBack(t *testing.T) {
	for _, name := range []string{"llama-3.1-8b-h100-tp2", "sim-8b-h100-32slots"} {
		t.Run(name, func(t *testing.T) {
			cfg, err := engine.Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			o := Options{Runs: 3, Noise: 0.05, Seed: 7}
			p, err := Run(cfg, name, o)
			if err != nil {
				t.Fatal(err)
			}
			ttftFile, tpotFile := files(t, p)
			ttft, err := profile.ParseTTFT("ttft.json", ttftFile, "p50")
			if err != nil {
				t.Fatal(err)
			}
			tpot, err := profile.ParseTPOT("tpot.json", tpotFile, "p50")
			if err != nil {
				t.Fatal(err)
			}
			// A lone request's TTFT, against the profile between two of its points.
			e, err := engine.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := lone(e.Config(), 99, 3000)
			if err != nil {
				t.Fatal(err)
			}
			if pred := ttft.Predict(3000); !near(pred, ms(got), 0.1) {
				t.Errorf("TTFT of 3,000 tokens: profile %.1f ms, engine %.1f ms", pred, ms(got))
			}
			// A batch of 24 requests of 100 tokens, against the bilinear estimate.
			gaps, err := batch(cfg, 99, 24, 100)
			if err != nil {
				t.Fatal(err)
			}
			mean := 0.0
			for _, g := range gaps {
				mean += g / float64(len(gaps))
			}
			if pred := tpot.Predict(24, 100); !near(pred, mean, 0.1) {
				t.Errorf("TPOT at batch 24 × 100 tokens: profile %.2f ms, engine %.2f ms", pred, mean)
			}
			if md := ttft.Metadata; md.KVCacheTokens != cfg.NumGPUBlocks*cfg.BlockSize || md.MaxNumBatchedTokens != cfg.MaxNumBatchedTokens ||
				md.ChunkedPrefill == nil || *md.ChunkedPrefill != (cfg.Family != engine.FamilySlot) {
				t.Errorf("metadata %+v", md)
			}
			again, err := Run(cfg, name, o)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := files(t, again); !bytes.Equal(a, ttftFile) || !bytes.Equal(b, tpotFile) {
				t.Error("the same seed gave different profiles")
			}
		})
	}
}

// files writes p into a directory and returns both files.
func files(t *testing.T, p *Profiles) (ttft, tpot []byte) {
	t.Helper()
	a, b, err := p.WriteDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ttft, err = os.ReadFile(a); err == nil {
		tpot, err = os.ReadFile(b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ttft, tpot
}

func near(a, b, rel float64) bool { return a >= b*(1-rel) && a <= b*(1+rel) }

func TestRunRefusesNoRuns(t *testing.T) {
	cfg, _ := engine.Preset("llama-3.1-8b-h100-tp2")
	if _, err := Run(cfg, "x", Options{}); err == nil {
		t.Error("0 runs accepted")
	}
}
