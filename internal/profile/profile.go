// Package profile reads Llumnix's latency profiles — a TTFT profile over the prompt tokens of a
// prefill and a TPOT profile over the decode batch size and tokens per request, each the
// percentiles of a benchmark run at every point — and predicts from them by interpolation
// between the profiled points, as Llumnix's InterpolationPredictor does.
package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Percentiles are the statistics of a profile point (Llumnix's: its points also carry std and
// raw_data); a profile is read at one of them.
var Percentiles = []string{"mean", "min", "max", "p50", "p95", "p99"}

// DefaultPercentile is the statistic Llumnix predicts from.
const DefaultPercentile = "p50"

// Metadata describes a profile. Model, Timestamp and Description are Llumnix's and are kept for
// reports; the other members are Foresight's own (Llumnix's reader ignores them) and carry what
// `foresight profile` knows about the server profiled, so a producer needs no parameter to read
// the profile right: its step budget and its KV-cache capacity.
type Metadata struct {
	Model       string `json:"model"`
	Timestamp   string `json:"timestamp"`
	Description string `json:"description,omitempty"`
	// Engine names what was profiled (for `foresight profile`, the simulated preset).
	Engine string `json:"engine,omitempty"`
	// MaxNumBatchedTokens is the engine's prefill budget of one step (vLLM
	// --max-num-batched-tokens); 0: not recorded.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens,omitempty"`
	// ChunkedPrefill says whether the engine cuts a prompt into steps of MaxNumBatchedTokens;
	// absent: not recorded.
	ChunkedPrefill *bool `json:"chunked_prefill,omitempty"`
	// KVCacheTokens is the engine's KV-cache capacity in tokens; 0: not recorded.
	KVCacheTokens int `json:"kv_cache_tokens,omitempty"`
}

// readFile decodes a profile file: an object of metadata and results, nothing else at the top
// (a misspelt member is refused), each result an object whose members field reads when asked
// (others, such as Llumnix's std and raw_data, are not read); metadata is kept as it comes.
func readFile(name string, data []byte) (Metadata, []map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Metadata{}, nil, fmt.Errorf("%s: not a profile (JSON with metadata and results): %w", name, err)
	}
	for k := range top {
		if k != "metadata" && k != "results" {
			return Metadata{}, nil, fmt.Errorf("%s: unknown member %q (a profile holds metadata and results)", name, k)
		}
	}
	var md Metadata
	if raw, ok := top["metadata"]; ok {
		if err := json.Unmarshal(raw, &md); err != nil {
			return Metadata{}, nil, fmt.Errorf("%s: metadata: %w", name, err)
		}
	}
	raw, ok := top["results"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Metadata{}, nil, fmt.Errorf("%s: results is missing", name)
	}
	var results []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &results); err != nil {
		return Metadata{}, nil, fmt.Errorf("%s: results must be an array of objects: %w", name, err)
	}
	if len(results) == 0 {
		return Metadata{}, nil, fmt.Errorf("%s: results is empty: a profile needs at least one point", name)
	}
	return md, results, nil
}

// field returns result i's numeric member key: a finite number ≥ 0, or an error naming the
// file, the point and what is wrong.
func field(name string, i int, r map[string]json.RawMessage, key string) (float64, error) {
	raw, ok := r[key]
	if !ok {
		return 0, fmt.Errorf("%s: results[%d] has no %s", name, i, key)
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("%s: results[%d].%s must be a number, got %s", name, i, key, strings.TrimSpace(string(raw)))
	}
	if v < 0 {
		return 0, fmt.Errorf("%s: results[%d].%s must be ≥ 0, got %v", name, i, key, v)
	}
	return v, nil
}

// count returns result i's field as a positive whole number (tokens, a batch size).
func count(name string, i int, r map[string]json.RawMessage, key string) (float64, error) {
	v, err := field(name, i, r, key)
	if err != nil {
		return 0, err
	}
	if v < 1 || v != math.Trunc(v) {
		return 0, fmt.Errorf("%s: results[%d].%s must be a whole number ≥ 1, got %v", name, i, key, v)
	}
	return v, nil
}

// noiseTolerance is how far a latency may fall as the prefill, the batch or the context grows
// before the profile is refused: a measured percentile moves with the run's noise (a decode step
// whose cost does not depend on the context length is flat along tokens_per_request, and its
// p50 wobbles by a fraction of a percent over a few hundred samples), while a fall of more than 5 %
// is a measurement to redo.
const noiseTolerance = 0.05

// falls reports whether v, measured at a larger point than prev, is lower than prev by more than
// the noise tolerance.
func falls(prev, v float64) bool { return v < prev*(1-noiseTolerance) }

// KnownPercentile reports whether a profile can be read at statistic p.
func KnownPercentile(p string) bool { return slices.Contains(Percentiles, p) }

// checkPercentile refuses a statistic a profile cannot be read at.
func checkPercentile(p string) error {
	if !KnownPercentile(p) {
		return fmt.Errorf("percentile %q: accepted: %s", p, strings.Join(Percentiles, ", "))
	}
	return nil
}
