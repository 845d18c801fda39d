package profile

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/foresight-router/foresight/internal/quantile"
)

// Stats are the statistics of one profile point, in ms, as Llumnix writes them: the mean, the
// standard deviation, the extremes, three percentiles and the samples themselves.
type Stats struct {
	Mean    float64   `json:"mean"`
	Std     float64   `json:"std"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	P50     float64   `json:"p50"`
	P95     float64   `json:"p95"`
	P99     float64   `json:"p99"`
	RawData []float64 `json:"raw_data,omitempty"`
}

// StatsOf summarises samples (ms, at least one); raw keeps them in the point.
func StatsOf(samples []float64, raw bool) Stats {
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum, sq float64
	for _, v := range s {
		sum += v
	}
	mean := sum / float64(len(s))
	for _, v := range s {
		sq += (v - mean) * (v - mean)
	}
	st := Stats{Mean: mean, Std: math.Sqrt(sq / float64(len(s))), Min: s[0], Max: s[len(s)-1],
		P50: quantile.Sorted(s, 0.50), P95: quantile.Sorted(s, 0.95), P99: quantile.Sorted(s, 0.99)}
	if raw {
		st.RawData = slices.Clone(samples)
	}
	return st
}

// TTFTPoint is one point of a TTFT profile: a prefill of TokensNum uncached tokens.
type TTFTPoint struct {
	TokensNum int `json:"tokens_num"`
	Stats
}

// TPOTPoint is one point of a TPOT profile: a decode step of BatchSize requests holding
// TokensPerRequest tokens each.
type TPOTPoint struct {
	BatchSize        int `json:"batch_size"`
	TokensPerRequest int `json:"tokens_per_request"`
	Stats
}

// Write writes a profile of points (TTFTPoint or TPOTPoint) as Llumnix reads it, indented.
func Write[P TTFTPoint | TPOTPoint](w io.Writer, md Metadata, points []P) error {
	if len(points) == 0 {
		return fmt.Errorf("writing a profile: no points")
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Metadata Metadata `json:"metadata"`
		Results  []P      `json:"results"`
	}{md, points})
}
