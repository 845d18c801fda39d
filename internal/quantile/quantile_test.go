package quantile

import (
	"math"
	"testing"
)

// TestSorted works every expected value out by hand: the rank is h = q·(n−1), k = ⌊h⌋, and the
// answer is x[k] + (h−k)·(x[k+1] − x[k]). numpy agrees: np.percentile(x, 100*q) with its
// default method "linear".
func TestSorted(t *testing.T) {
	one, four, five := []float64{7}, []float64{1, 2, 3, 4}, []float64{10, 20, 30, 40, 50}
	tests := []struct {
		name   string
		sorted []float64
		q      float64
		want   float64
	}{
		{"empty", nil, 0.5, 0},
		{"one value, median", one, 0.5, 7}, // n−1 = 0: every rank is 0
		{"one value, p99", one, 0.99, 7},
		{"minimum", four, 0, 1},                     // h = 0
		{"maximum", four, 1, 4},                     // h = 3, the last index
		{"median of an even count", four, 0.5, 2.5}, // h = 1.5: 2 + 0.5·(3 − 2)
		{"p95 of 1..4", four, 0.95, 3.85},           // h = 2.85: 3 + 0.85·(4 − 3); R's quantile(1:4, .95)
		{"p25 of 1..4", four, 0.25, 1.75},           // h = 0.75: 1 + 0.75·(2 − 1)
		{"median of an odd count", five, 0.5, 30},   // h = 2: x[2] exactly
		{"p95 of 10..50", five, 0.95, 48},           // h = 3.8: 40 + 0.8·(50 − 40)
		{"p99 of 10..50", five, 0.99, 49.6},         // h = 3.96: 40 + 0.96·(50 − 40)
		{"p10 of 10..50", five, 0.10, 14},           // h = 0.4: 10 + 0.4·(20 − 10)
		{"below 0 clamps to the minimum", five, -0.5, 10},
		{"above 1 clamps to the maximum", five, 1.5, 50},
		{"ties", []float64{5, 5, 5, 9}, 0.5, 5},             // h = 1.5: 5 + 0.5·(5 − 5)
		{"negative values", []float64{-4, -2, 0}, 0.25, -3}, // h = 0.5: −4 + 0.5·(−2 − (−4))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sorted(tt.sorted, tt.q); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Sorted(%v, %v) = %v, want %v", tt.sorted, tt.q, got, tt.want)
			}
		})
	}
	if got := Sorted(four, math.NaN()); !math.IsNaN(got) {
		t.Errorf("Sorted(1..4, NaN) = %v, want NaN", got)
	}
}

// TestSortedOfHundred is the shape of the benches' latencies: 100 values 1..100, whose p99 is no
// longer the 99th value (nearest rank) but sits between the 99th and the 100th.
func TestSortedOfHundred(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(i + 1)
	}
	for _, tt := range []struct{ q, want float64 }{
		{0.50, 50.5},  // h = 49.5: 50 + 0.5·(51 − 50)
		{0.99, 99.01}, // h = 98.01: 99 + 0.01·(100 − 99)
		{0.95, 95.05}, // h = 94.05: 95 + 0.05·(96 − 95)
	} {
		if got := Sorted(v, tt.q); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Sorted(1..100, %v) = %v, want %v", tt.q, got, tt.want)
		}
	}
}
