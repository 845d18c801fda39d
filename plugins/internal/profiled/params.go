package profiled

import (
	"errors"
	"fmt"

	"github.com/foresight-router/foresight/internal/profile"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Params are the producer's parameters, decoded from JSON over Defaults.
type Params struct {
	// TTFTProfile and TPOTProfile are the profile files, relative to the config file's directory
	// unless absolute (sdk.ResolvePath). Both are required.
	TTFTProfile string `json:"ttftProfile"`
	TPOTProfile string `json:"tpotProfile"`
	// Percentile is the statistic of every profile point the producer predicts from: mean, min,
	// max, p50, p95 or p99.
	Percentile string `json:"percentile"`
	// MaxNumBatchedTokens is the engines' prefill budget of one step (vLLM
	// --max-num-batched-tokens), in [0, 10⁷]; 0 takes the TTFT profile's metadata, and without it
	// vLLM's default for its OpenAI server on GPUs of 70 GiB or more, 8192.
	MaxNumBatchedTokens int `json:"maxNumBatchedTokens"`
	// Chunked says whether the engines prefill in chunks of MaxNumBatchedTokens (vLLM V1 always
	// does); false prefills a prompt in one step whatever its length (llm-d-inference-sim).
	// Absent: true unless the TTFT profile's metadata says the engine has no step budget.
	Chunked *bool `json:"chunked,omitempty"`
	// KVCacheTokens is the engines' KV-cache capacity in tokens, in [0, 10¹⁰]: the producer
	// reads the tokens of the decode batch as kv_cache_usage × KVCacheTokens. 0 takes the TPOT
	// profile's metadata; a profile without it needs the parameter (vLLM logs it at start:
	// "GPU KV cache size: N tokens").
	KVCacheTokens int `json:"kvCacheTokens"`
}

// defaultMaxNumBatchedTokens is vLLM V1's max_num_batched_tokens for its OpenAI server on GPUs of
// at least 70 GiB other than the A100 (EngineArgs.get_batch_defaults), the H100 class Llumnix's
// profiles are usually taken on.
const defaultMaxNumBatchedTokens = 8192

// Defaults read the profiles at their p50, as Llumnix does (predict_utils.go adds each point's
// P50 to its interpolation), and take the engine's shape from the profiles' metadata.
func Defaults() Params { return Params{Percentile: profile.DefaultPercentile} }

// Validate returns an error naming the first parameter that is missing or out of range; whether
// the files read is Configure's to say.
func (p *Params) Validate() error {
	if p.TTFTProfile == "" || p.TPOTProfile == "" {
		return errors.New(`parameters "ttftProfile" and "tpotProfile" are required: the profile files (foresight profile writes them)`)
	}
	if !profile.KnownPercentile(p.Percentile) {
		return fmt.Errorf("parameter %q must be one of %q, got %q", "percentile", profile.Percentiles, p.Percentile)
	}
	if err := sdk.CheckRange("maxNumBatchedTokens", float64(p.MaxNumBatchedTokens), 0, 1e7); err != nil {
		return err
	}
	return sdk.CheckRange("kvCacheTokens", float64(p.KVCacheTokens), 0, 1e10)
}
