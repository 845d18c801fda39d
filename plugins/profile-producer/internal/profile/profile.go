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

// Percentiles are the statistics a profile point may carry; a profile is read at one of them.
var Percentiles = []string{"mean", "p50", "p90", "p95", "p99"}

// DefaultPercentile is the statistic Llumnix predicts from.
const DefaultPercentile = "p50"

// Metadata describes a profile; it is kept for reports and not interpreted.
type Metadata struct {
	Model       string `json:"model"`
	Timestamp   string `json:"timestamp"`
	Description string `json:"description,omitempty"`
}

// file is a profile file as Llumnix writes it: metadata and one result per profiled point.
type file struct {
	Metadata Metadata                     `json:"metadata"`
	Results  []map[string]json.RawMessage `json:"results"`
}

// readFile decodes a profile file strictly (unknown top-level members are refused) and returns,
// per result, the named numeric fields.
func readFile(name string, data []byte) (Metadata, []map[string]float64, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return Metadata{}, nil, fmt.Errorf("%s: not a profile (JSON with metadata and results): %w", name, err)
	}
	if f.Results == nil {
		return Metadata{}, nil, fmt.Errorf("%s: results is missing", name)
	}
	if len(f.Results) == 0 {
		return Metadata{}, nil, fmt.Errorf("%s: results is empty: a profile needs at least one point", name)
	}
	out := make([]map[string]float64, len(f.Results))
	for i, r := range f.Results {
		out[i] = map[string]float64{}
		for k, raw := range r {
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return Metadata{}, nil, fmt.Errorf("%s: results[%d].%s must be a number, got %s", name, i, k, strings.TrimSpace(string(raw)))
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return Metadata{}, nil, fmt.Errorf("%s: results[%d].%s must be a finite number ≥ 0, got %v", name, i, k, v)
			}
			out[i][k] = v
		}
	}
	return f.Metadata, out, nil
}

// field returns result i's field, or an error naming what is missing.
func field(name string, i int, r map[string]float64, key string) (float64, error) {
	v, ok := r[key]
	if !ok {
		return 0, fmt.Errorf("%s: results[%d] has no %s", name, i, key)
	}
	return v, nil
}

// count returns result i's field as a positive whole number (tokens, a batch size).
func count(name string, i int, r map[string]float64, key string) (float64, error) {
	v, err := field(name, i, r, key)
	if err != nil {
		return 0, err
	}
	if v < 1 || v != math.Trunc(v) {
		return 0, fmt.Errorf("%s: results[%d].%s must be a whole number ≥ 1, got %v", name, i, key, v)
	}
	return v, nil
}

// checkPercentile refuses a statistic a profile cannot be read at.
func checkPercentile(p string) error {
	if !slices.Contains(Percentiles, p) {
		return fmt.Errorf("percentile %q: accepted: %s", p, strings.Join(Percentiles, ", "))
	}
	return nil
}
