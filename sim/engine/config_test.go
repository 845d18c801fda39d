package engine

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestPresets(t *testing.T) {
	tests := []struct {
		name   string
		alpha  [3]float64 // rounded as published
		beta   [3]float64
		blocks int
	}{{
		name:  "llama-3.1-8b-h100-tp2",
		alpha: [3]float64{1601.35, 3.51, 1805.54}, // BLIS defaults.yaml (README.md)
		beta:  [3]float64{6910.42, 17.67, 2.84},
		// Per GPU: 79.19 GiB · 0.9 − 4.76 − 0.6 = 65.911 GiB = 70,771,397,362 B; minus half the
		// weights (16,060,522,496 / 2) leaves 62,741,136,114 B; a block of 16 tokens × 64 KiB
		// (4 of 8 KV heads) is 1,048,576 B → 59,834 blocks.
		blocks: 59834,
	}, {
		name:  "llama-3.1-8b-h100-tp1",
		alpha: [3]float64{232.46, 1.75, 3357.44},
		beta:  [3]float64{5752.71, 17.25, 6.00},
		// 79.19 GiB · 0.9 − 4.76 − 0.15 = 66.361 GiB = 71,254,581,182 B; minus 16,060,522,496 B
		// of weights leaves 55,194,058,686 B; blocks of 16 × 128 KiB = 2,097,152 B → 26,318.
		blocks: 26318,
	}, {
		name:   "llama-3.1-8b-h100-tp1-vllm0.11",
		alpha:  [3]float64{10326.27, 0, 0},
		beta:   [3]float64{6472.01, 19.80, 304.40},
		blocks: 26318,
	}}
	if got := len(presets); got != len(tests) {
		t.Errorf("%d presets, %d tested", got, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Preset(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if math.Abs(c.Coefficients.Alpha[i]-tt.alpha[i]) > 0.005 || math.Abs(c.Coefficients.Beta[i]-tt.beta[i]) > 0.005 {
					t.Errorf("coefficients %+v, want α %v β %v", c.Coefficients, tt.alpha, tt.beta)
				}
			}
			if c.NumGPUBlocks != tt.blocks {
				t.Errorf("num_gpu_blocks %d, want %d", c.NumGPUBlocks, tt.blocks)
			}
			// vLLM's H100 defaults for the OpenAI server, block size 16, Llama 3.1's context.
			if c.MaxNumSeqs != 1024 || c.MaxNumBatchedTokens != 8192 || c.BlockSize != 16 || c.MaxModelLen != 131072 {
				t.Errorf("scheduler settings %d seqs, %d tokens, block %d, max len %d", c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize, c.MaxModelLen)
			}
			if c.Speed != 1 || c.Noise != 0 {
				t.Errorf("speed %v, noise %v; want 1, 0", c.Speed, c.Noise)
			}
			// 1 ms of handshake; 131,072 B × 8 bit over 100 Gb/s = 10,485.76 ns per token.
			if want := (KVTransfer{Latency: time.Millisecond, PerToken: 10486}); c.KVTransfer != want {
				t.Errorf("KV transfer %+v, want %+v", c.KVTransfer, want)
			}
			if _, err := New(c); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestPresetUnknown(t *testing.T) {
	_, err := Preset("llama-9")
	if err == nil || !strings.Contains(err.Error(), `unknown engine preset "llama-9"; known presets: llama-3.1-8b-h100-tp1,`) {
		t.Errorf("Preset: %v", err)
	}
}

func TestKVBytesPerToken(t *testing.T) {
	// 32 layers × (K and V) × 8 KV heads × 128 head dim × 2 bytes (bf16) = 131,072 B = 128 KiB.
	if llama31KVBytesPerTok != 128<<10 {
		t.Errorf("Llama-3.1-8B KV bytes per token %d, want 131072", llama31KVBytesPerTok)
	}
	// Embeddings and LM head 2 × 128256 × 4096 = 1,050,673,152; per layer q, o 4096² each, k, v
	// 4096·1024 each, MLP 3 × 4096 × 14336, two norms of 4096: 218,112,000 × 32 layers =
	// 6,979,584,000; final norm 4096. Total 8,030,261,248.
	const params = 2*128256*4096 + 32*(2*4096*4096+2*4096*1024+3*4096*14336+2*4096) + 4096
	if params != llama31Params {
		t.Errorf("Llama-3.1-8B parameters %d, config.json gives %d", llama31Params, params)
	}
}
