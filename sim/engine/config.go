package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Coefficients are the BLIS "blackbox" latency model of one model/GPU/TP combination, in
// microseconds (see README.md for where each preset's values come from and how BLIS applies them):
//
//	step time      = Beta[0] + Beta[1]·(uncached prefill tokens in the step) + Beta[2]·(decode tokens in the step)
//	queueing delay = Alpha[0] + Alpha[1]·(input tokens)   (arrival → schedulable)
//	output delay   = Alpha[2] per output token             (non-blocking, seen by the client)
type Coefficients struct {
	Alpha [3]float64
	Beta  [3]float64
}

// Config describes one server of either family. Family selects the model; fields that only one
// family uses say so. Preset returns the documented configurations; every field is checked by
// Validate (New calls it).
type Config struct {
	// Family selects the engine model: FamilyBatch (or "") or FamilySlot.
	Family Family
	// MaxNumSeqs caps the running requests (vLLM and llm-d-inference-sim --max-num-seqs); for the
	// slot family it is the number of slots.
	MaxNumSeqs int
	// MaxNumBatchedTokens is the token budget of one step (vLLM --max-num-batched-tokens). Batch
	// family only; 0 for the slot family.
	MaxNumBatchedTokens int
	// BlockSize is the number of tokens per KV block (--block-size).
	BlockSize int
	// NumGPUBlocks is the KV cache capacity in blocks (vllm:cache_config_info num_gpu_blocks):
	// for the batch family including the null block vLLM reserves, at least 2; for the slot
	// family llm-d-inference-sim's --kv-cache-size, at least 1.
	NumGPUBlocks int
	// MaxModelLen rejects requests whose input plus output tokens exceed it (--max-model-len);
	// 0 means no such limit.
	MaxModelLen int
	// Coefficients give step times and overheads. Batch family only; zero for the slot family.
	Coefficients Coefficients
	// Noise is the relative standard deviation of step time: each non-empty step's time is
	// multiplied by an independent lognormal factor with mean 1 and this coefficient of
	// variation. 0 disables noise. The slot family ignores it: its jitter is Slot's std-devs.
	Noise float64
	// Speed multiplies every step time (batch) or every latency mean and std-dev (slot): 1 = the
	// preset's hardware, 1.25 = 25 % slower.
	Speed float64
	// Seed seeds the noise (batch) or the jitter (slot); the same Config and inputs give the
	// same events.
	Seed uint64
	// Slot is the slot family's latency model. Slot family only; zero for the batch family.
	Slot SlotConfig
	// KVTransfer is what pulling a RemotePrefill request's prompt KV from its prefill server
	// costs. Batch family: Latency + PerToken × the prompt tokens the local prefix cache lacks.
	// Slot family, llm-d-inference-sim's rule: Latency when it or
	// Slot.KVCacheTransferLatencyStdDev is non-zero, else PerToken × the prompt tokens,
	// jittered by the matching Slot std-dev. A network cost: Speed, Noise and the slot load
	// factor leave it alone.
	KVTransfer KVTransfer
}

// KVTransfer is the cost of moving a request's prompt KV from the prefill server that computed it
// to the decode server that continues it (prefill/decode disaggregation). README.md derives each
// preset's values.
type KVTransfer struct {
	// Latency is the fixed part of one transfer: the connector's handshake and setup
	// (llm-d-inference-sim's --kv-cache-transfer-latency).
	Latency time.Duration
	// PerToken is the time per token transferred: the model's KV bytes per token over the
	// link's bandwidth (--kv-cache-transfer-time-per-token).
	PerToken time.Duration
}

// validate reports negative durations through bad.
func (k KVTransfer) validate(bad func(format string, args ...any)) {
	if k.Latency < 0 {
		bad("kv_transfer.latency must be at least 0, got %v", k.Latency)
	}
	if k.PerToken < 0 {
		bad("kv_transfer.per_token must be at least 0, got %v", k.PerToken)
	}
}

// Validate reports every problem with c at once, checking the fields of c's family.
func (c Config) Validate() error {
	switch c.Family {
	case "", FamilyBatch:
		return c.validateBatch()
	case FamilySlot:
		return c.validateSlot()
	}
	return fmt.Errorf("family must be %q or %q, got %q", FamilyBatch, FamilySlot, c.Family)
}

func (c Config) validateBatch() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.MaxNumSeqs < 1 {
		bad("max_num_seqs must be at least 1, got %d", c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens < 1 {
		bad("max_num_batched_tokens must be at least 1, got %d", c.MaxNumBatchedTokens)
	} else if c.MaxNumBatchedTokens < c.MaxNumSeqs {
		// vLLM's SchedulerConfig refuses this too: a full batch of decodes must fit the budget.
		bad("max_num_batched_tokens (%d) must be at least max_num_seqs (%d)", c.MaxNumBatchedTokens, c.MaxNumSeqs)
	}
	if c.BlockSize < 1 {
		bad("block_size must be at least 1, got %d", c.BlockSize)
	}
	if c.NumGPUBlocks < 2 || c.NumGPUBlocks > math.MaxInt32/2 {
		bad("num_gpu_blocks must be in [2, %d] (block 0 is vLLM's null block), got %d", math.MaxInt32/2, c.NumGPUBlocks)
	}
	if c.MaxModelLen < 0 {
		bad("max_model_len must be 0 (unlimited) or positive, got %d", c.MaxModelLen)
	}
	for i, v := range c.Coefficients.Alpha {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad("alpha[%d] must be a finite number ≥ 0 µs, got %v", i, v)
		}
	}
	for i, v := range c.Coefficients.Beta {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad("beta[%d] must be a finite number ≥ 0 µs, got %v", i, v)
		}
	}
	if !(c.Noise >= 0) || math.IsInf(c.Noise, 0) {
		bad("noise must be a finite relative standard deviation ≥ 0, got %v", c.Noise)
	}
	if !(c.Speed > 0) || math.IsInf(c.Speed, 0) {
		bad("speed must be a finite factor > 0 (1 = preset speed), got %v", c.Speed)
	}
	if c.Slot != (SlotConfig{}) {
		bad("slot settings apply only to family %q; the batch family needs them zero", FamilySlot)
	}
	c.KVTransfer.validate(bad)
	return errors.Join(errs...)
}

// vLLM defaults on an H100 for the OpenAI API server (EngineArgs.get_batch_defaults: GPUs with
// at least 70 GiB that are not A100s) and its block size; see README.md.
const (
	h100MaxNumSeqs          = 1024
	h100MaxNumBatchedTokens = 8192
	vllmBlockSize           = 16
	llama31MaxModelLen      = 131072 // config.json max_position_embeddings
)

// Llama-3.1-8B on H100 80 GB: the inputs of the KV capacity arithmetic in README.md.
const (
	h100TotalGiB         = 79.19 // what CUDA reports for an H100 80GB HBM3
	gpuMemoryUtilization = 0.9   // vLLM --gpu-memory-utilization default
	llama31Params        = 8_030_261_248
	bf16Bytes            = 2
	llama31ActivationGiB = 4.76 // llm-d capacity planner, measured peak for Llama-8B
	nonTorchTP1GiB       = 0.15 // llm-d capacity planner
	nonTorchTPNGiB       = 0.6  // llm-d capacity planner, TP ≥ 2
	llama31KVBytesPerTok = 32 * 2 * 8 * 128 * bf16Bytes
	gib                  = 1 << 30
)

// The KV transfer of a remote prefill (README.md, "KV transfer"): one 100 Gb/s link per server,
// at its rated speed, and about a millisecond of RDMA handshake and setup per transfer.
const (
	kvLinkBitsPerSecond = 100e9
	kvTransferLatency   = time.Millisecond
)

// kvPerToken is the time bytesPerToken of KV take over a link of bitsPerSecond, to the nanosecond.
func kvPerToken(bytesPerToken int, bitsPerSecond float64) time.Duration {
	return time.Duration(math.Round(float64(bytesPerToken) * 8 / bitsPerSecond * 1e9))
}

// gpuBlocks is vLLM's profiling arithmetic: per GPU, the memory vLLM may use (total ×
// utilization) minus the weight shard, peak activations and non-torch memory is KV cache, cut
// into blocks of blockSize tokens of this GPU's KV-head shard.
func gpuBlocks(totalGiB, util float64, weightBytes int64, activationGiB, nonTorchGiB float64, kvBytesPerToken, tp, blockSize int) int {
	kvBytes := (totalGiB*util-activationGiB-nonTorchGiB)*gib - float64(weightBytes)/float64(tp)
	return int(kvBytes) / (blockSize * kvBytesPerToken / tp)
}

// presets are the batch family's documented server configurations (README.md gives every
// source); slotPresets are the slot family's.
var presets = map[string]func() Config{
	// BLIS defaults.yaml, Llama-3.1-8B-Instruct, H100, TP 2, vLLM v0.8.4.
	"llama-3.1-8b-h100-tp2": func() Config {
		return h100Llama31(2, Coefficients{
			Alpha: [3]float64{1601.350510688092, 3.512476196805965, 1805.5430360826988},
			Beta:  [3]float64{6910.420479880494, 17.67057489844186, 2.8377471109943855},
		})
	},
	// BLIS defaults.yaml as first published (2026-01-29 to 2026-03-05), same model, H100, TP 1,
	// vLLM v0.8.4: the same training campaign as the TP 2 set.
	"llama-3.1-8b-h100-tp1": func() Config {
		return h100Llama31(1, Coefficients{
			Alpha: [3]float64{232.46191091038054, 1.752360364195244, 3357.4400353290152},
			Beta:  [3]float64{5752.705191348184, 17.25086436834028, 5.999143920128404},
		})
	},
	// BLIS defaults.yaml after its 2026-03-05 retraining from GuideLLM sweeps (relabelled vLLM
	// v0.11.0), same model, H100, TP 1. Kept for sensitivity runs; see README.md.
	"llama-3.1-8b-h100-tp1-vllm0.11": func() Config {
		return h100Llama31(1, Coefficients{
			Alpha: [3]float64{10326.268121600151, 0, 0},
			Beta:  [3]float64{6472.007648778123, 19.79721387814611, 304.4021040302657},
		})
	},
}

func h100Llama31(tp int, c Coefficients) Config {
	nonTorch := nonTorchTP1GiB
	if tp > 1 {
		nonTorch = nonTorchTPNGiB
	}
	return Config{
		MaxNumSeqs:          h100MaxNumSeqs,
		MaxNumBatchedTokens: h100MaxNumBatchedTokens,
		BlockSize:           vllmBlockSize,
		NumGPUBlocks: gpuBlocks(h100TotalGiB, gpuMemoryUtilization, llama31Params*bf16Bytes,
			llama31ActivationGiB, nonTorch, llama31KVBytesPerTok, tp, vllmBlockSize),
		MaxModelLen:  llama31MaxModelLen,
		Coefficients: c,
		Speed:        1,
		// The whole prompt's KV, every TP rank's share of it, crosses the server's one link.
		KVTransfer: KVTransfer{Latency: kvTransferLatency, PerToken: kvPerToken(llama31KVBytesPerTok, kvLinkBitsPerSecond)},
	}
}

// Presets lists the preset names of both families, sorted.
func Presets() []string {
	names := make([]string, 0, len(presets)+len(slotPresets))
	for n := range presets {
		names = append(names, n)
	}
	for n := range slotPresets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns the named configuration, of either family, with no noise, speed 1 and seed 0.
func Preset(name string) (Config, error) {
	p, ok := presets[name]
	if !ok {
		p, ok = slotPresets[name]
	}
	if !ok {
		return Config{}, fmt.Errorf("unknown engine preset %q; known presets: %s", name, strings.Join(Presets(), ", "))
	}
	return p(), nil
}
