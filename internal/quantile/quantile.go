// Package quantile holds the repository's one quantile estimator, so that every percentile the
// router, the simulator, the benches and the demo report means the same thing: linear
// interpolation between order statistics, numpy's default (np.percentile and np.quantile with
// method "linear"; R's type 7; Hyndman and Fan's definition 7).
//
// For the n values x₀ ≤ x₁ ≤ … ≤ xₙ₋₁ the q-quantile sits at rank h = q·(n−1): with
// k = ⌊h⌋ it is xₖ + (h−k)·(xₖ₊₁ − xₖ), which is xₖ itself when h is a whole number. The
// minimum is the 0-quantile, the maximum the 1-quantile, and the median of an even number of
// values is the mean of the middle two.
//
// It is a leaf package (the standard library only), beside internal/splitmix, so that host/
// and sim/, which may not import each other in that direction, can both use it.
package quantile

import "math"

// Sorted returns the q-quantile of sorted, which must be in ascending order (it is neither
// checked nor modified): the value at rank q·(n−1), interpolated linearly between the two
// order statistics around it (see the package documentation). q is clamped to [0, 1]; a NaN q
// gives NaN. An empty slice gives 0, which is how every report of the repository shows a
// percentile of nothing.
func Sorted(sorted []float64, q float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return 0
	case math.IsNaN(q):
		return math.NaN()
	}
	h := min(max(q, 0), 1) * float64(n-1)
	k := int(h) // h ≥ 0, so the conversion floors
	if k >= n-1 {
		return sorted[n-1]
	}
	return sorted[k] + (h-float64(k))*(sorted[k+1]-sorted[k])
}
