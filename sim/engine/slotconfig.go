package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// SlotConfig is the slot family's latency model: llm-d-inference-sim's per-token calculator,
// with its flag names. README.md gives the formulas and when the load is read.
type SlotConfig struct {
	// InterTokenLatency is the mean time between two output tokens of one request at load
	// factor 1 (--inter-token-latency).
	InterTokenLatency time.Duration
	// InterTokenLatencyStdDev is its Gaussian jitter (--inter-token-latency-std-dev), at most
	// 30 % of InterTokenLatency.
	InterTokenLatencyStdDev time.Duration
	// PrefillOverhead is the constant part of the time to first token (--prefill-overhead).
	PrefillOverhead time.Duration
	// PrefillTimePerToken is the time per uncached prompt token (--prefill-time-per-token).
	PrefillTimePerToken time.Duration
	// PrefillTimeStdDev is the Gaussian jitter of the whole prefill time
	// (--prefill-time-std-dev).
	PrefillTimeStdDev time.Duration
	// TimeFactorUnderLoad is the load factor with every slot occupied (--time-factor-under-load,
	// at least 1); it falls linearly to 1 with one request running.
	TimeFactorUnderLoad float64
	// Resolution truncates every mean, std-dev and sampled duration to a multiple of it:
	// llm-d-inference-sim works in whole milliseconds (time.Millisecond); 0 keeps nanoseconds.
	Resolution time.Duration
	// KVCacheTransferLatencyStdDev is the Gaussian jitter of Config.KVTransfer.Latency
	// (--kv-cache-transfer-latency-std-dev), at most 30 % of it. Either of the two being
	// non-zero makes a remote prefill's transfer take the latency rather than the per-token time.
	KVCacheTransferLatencyStdDev time.Duration
	// KVCacheTransferTimeStdDev is the Gaussian jitter of the per-token transfer time, applied
	// to its total (--kv-cache-transfer-time-std-dev).
	KVCacheTransferTimeStdDev time.Duration
}

// slotBlockSizes are the block sizes llm-d-inference-sim accepts (--block-size).
var slotBlockSizes = []int{8, 16, 32, 64, 128}

// maxSlotStdDevShare is llm-d-inference-sim's cap on a std-dev relative to its mean.
const maxSlotStdDevShare = 0.3

func (c Config) validateSlot() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.MaxNumSeqs < 1 {
		bad("max_num_seqs (slots) must be at least 1, got %d", c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens != 0 {
		bad("max_num_batched_tokens must be 0 for family %q (it has no step budget), got %d", FamilySlot, c.MaxNumBatchedTokens)
	}
	if !slices.Contains(slotBlockSizes, c.BlockSize) {
		bad("block_size must be one of %v for family %q, got %d", slotBlockSizes, FamilySlot, c.BlockSize)
	}
	if c.NumGPUBlocks < 1 || c.NumGPUBlocks > math.MaxInt32 {
		bad("num_gpu_blocks (kv-cache-size) must be in [1, %d], got %d", math.MaxInt32, c.NumGPUBlocks)
	}
	if c.MaxModelLen < 0 {
		bad("max_model_len must be 0 (unlimited) or positive, got %d", c.MaxModelLen)
	}
	if c.Coefficients != (Coefficients{}) {
		bad("coefficients apply only to family %q; the slot family needs them zero", FamilyBatch)
	}
	if !(c.Noise >= 0) || math.IsInf(c.Noise, 0) {
		bad("noise must be a finite relative standard deviation ≥ 0 (the slot family ignores it), got %v", c.Noise)
	}
	if !(c.Speed > 0) || math.IsInf(c.Speed, 0) {
		bad("speed must be a finite factor > 0 (1 = preset speed), got %v", c.Speed)
	}
	s := c.Slot
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"slot.inter_token_latency", s.InterTokenLatency},
		{"slot.inter_token_latency_std_dev", s.InterTokenLatencyStdDev},
		{"slot.prefill_overhead", s.PrefillOverhead},
		{"slot.prefill_time_per_token", s.PrefillTimePerToken},
		{"slot.prefill_time_std_dev", s.PrefillTimeStdDev},
		{"slot.resolution", s.Resolution},
		{"slot.kv_cache_transfer_latency_std_dev", s.KVCacheTransferLatencyStdDev},
		{"slot.kv_cache_transfer_time_std_dev", s.KVCacheTransferTimeStdDev},
	} {
		if d.v < 0 {
			bad("%s must be at least 0, got %v", d.name, d.v)
		}
	}
	if float64(s.InterTokenLatencyStdDev) > maxSlotStdDevShare*float64(s.InterTokenLatency) {
		bad("slot.inter_token_latency_std_dev must be at most 30 %% of slot.inter_token_latency (%v), got %v",
			s.InterTokenLatency, s.InterTokenLatencyStdDev)
	}
	if float64(s.KVCacheTransferLatencyStdDev) > maxSlotStdDevShare*float64(c.KVTransfer.Latency) {
		bad("slot.kv_cache_transfer_latency_std_dev must be at most 30 %% of kv_transfer.latency (%v), got %v",
			c.KVTransfer.Latency, s.KVCacheTransferLatencyStdDev)
	}
	if !(s.TimeFactorUnderLoad >= 1) || math.IsInf(s.TimeFactorUnderLoad, 0) {
		bad("slot.time_factor_under_load must be a finite factor ≥ 1, got %v", s.TimeFactorUnderLoad)
	}
	c.KVTransfer.validate(bad)
	return errors.Join(errs...)
}

// Slot presets: llm-d-inference-sim's published per-token profiles (docs/latency-profiles.md)
// with 32 slots, its default KV cache and block size, and Llama 3.1's context. README.md
// gives the sources and the choices.
const (
	slotPresetSlots      = 32   // the outside evaluation's max-num-seqs
	llmdKVCacheSize      = 1024 // llm-d-inference-sim's --kv-cache-size default
	llmdBlockSize        = 16   // its --block-size default
	llmdResolution       = time.Millisecond
	llama31ContextTokens = 131072 // Llama 3.1 8B and 70B max_position_embeddings
)

// slotPresets are the slot family's documented configurations. Their KV transfer is the
// profiles' per-token one (kv-cache-transfer-time-per-token and its std-dev; no fixed latency).
var slotPresets = map[string]func() Config{
	// Profile 1: 8B-class model on H100, balanced load (per-token calculator).
	"sim-8b-h100-32slots": func() Config {
		return llmdSlots(SlotConfig{
			InterTokenLatency:         12 * time.Millisecond,
			InterTokenLatencyStdDev:   2 * time.Millisecond,
			PrefillOverhead:           30 * time.Millisecond,
			PrefillTimePerToken:       250 * time.Microsecond,
			PrefillTimeStdDev:         5 * time.Millisecond,
			TimeFactorUnderLoad:       2.0,
			KVCacheTransferTimeStdDev: 200 * time.Microsecond,
		}, KVTransfer{PerToken: 3 * time.Microsecond})
	},
	// Profile 2: 70B model on 8×H100 (TP=8), throughput-optimized (per-token calculator).
	"sim-70b-h100-tp8-32slots": func() Config {
		return llmdSlots(SlotConfig{
			InterTokenLatency:         25 * time.Millisecond,
			InterTokenLatencyStdDev:   4 * time.Millisecond,
			PrefillOverhead:           80 * time.Millisecond,
			PrefillTimePerToken:       500 * time.Microsecond,
			PrefillTimeStdDev:         15 * time.Millisecond,
			TimeFactorUnderLoad:       3.0,
			KVCacheTransferTimeStdDev: 500 * time.Microsecond,
		}, KVTransfer{PerToken: 8 * time.Microsecond})
	},
}

func llmdSlots(s SlotConfig, kv KVTransfer) Config {
	s.Resolution = llmdResolution
	return Config{
		Family:       FamilySlot,
		MaxNumSeqs:   slotPresetSlots,
		BlockSize:    llmdBlockSize,
		NumGPUBlocks: llmdKVCacheSize,
		MaxModelLen:  llama31ContextTokens,
		Speed:        1,
		Slot:         s,
		KVTransfer:   kv,
	}
}
