package bench

import (
	"testing"
	"time"
)

// The added TTFT is a percentile of per-request differences (request n through the proxy minus
// request n sent direct), over the requests that succeeded both ways, not a difference of
// percentiles.
func TestPairedAdded(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name        string
		direct, via []time.Duration
		want        Percentiles
	}{
		{
			// Differences 1, 2, 3 ms: p50 the middle one; p99 at rank 0.99·2 = 1.98, 2 + 0.98·1 = 2.98 ms.
			name:   "three pairs",
			direct: []time.Duration{10 * ms, 20 * ms, 30 * ms},
			via:    []time.Duration{11 * ms, 22 * ms, 33 * ms},
			want:   Percentiles{P50: 2000, P99: 2980},
		},
		{
			// The difference of the percentiles would be p50 10 − 15 = −5 ms and p99
			// (10 + 0.98·31) − (15 + 0.98·25) = 0.88 ms; the paired differences are −5, 0 and
			// 1 ms: p50 0, p99 at rank 1.98: 0 + 0.98·1 = 0.98 ms.
			name:   "pairs, not percentiles",
			direct: []time.Duration{15 * ms, 10 * ms, 40 * ms},
			via:    []time.Duration{10 * ms, 10 * ms, 41 * ms},
			want:   Percentiles{P50: 0, P99: 980},
		},
		{
			// Request 1 failed through the proxy, request 2 direct (zero): only request 0 pairs,
			// 4 ms.
			name:   "failures dropped from both sides",
			direct: []time.Duration{6 * ms, 10 * ms, 0},
			via:    []time.Duration{10 * ms, 0, 12 * ms},
			want:   Percentiles{P50: 4000, P99: 4000},
		},
		{
			name: "nothing paired: zero, as every percentile of nothing",
			want: Percentiles{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pairedAdded(tt.direct, tt.via); got != tt.want {
				t.Errorf("pairedAdded = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The CPU per request at two answer lengths splits into a part per token and a fixed part.
func TestSplitCPU(t *testing.T) {
	tests := []struct {
		name                        string
		longMs, shortMs             float64
		long, short                 int
		wantUsPerToken, wantFixedMs float64
	}{
		// nginx's floor: 0.7 ms + 40 µs × 200 = 8.7 ms; at 20 tokens 0.7 + 0.8 = 1.5 ms.
		// (8.7 − 1.5) / 180 = 0.04 ms = 40 µs; fixed 8.7 − 200 × 0.04 = 0.7 ms.
		{"nginx-like", 8.7, 1.5, 200, 20, 40, 0.7},
		// Nothing per token: the fixed part is the whole.
		{"fixed only", 5, 5, 200, 20, 0, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			us, fixed := splitCPU(tt.longMs, tt.shortMs, tt.long, tt.short)
			if d := us - tt.wantUsPerToken; d > 1e-9 || d < -1e-9 {
				t.Errorf("µs per token %v, want %v", us, tt.wantUsPerToken)
			}
			if d := fixed - tt.wantFixedMs; d > 1e-9 || d < -1e-9 {
				t.Errorf("fixed ms %v, want %v", fixed, tt.wantFixedMs)
			}
		})
	}
}
