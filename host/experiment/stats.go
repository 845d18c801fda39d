package experiment

import (
	"fmt"
	"math"

	"github.com/foresight-router/foresight/internal/quantile"
)

// z95 is the standard normal quantile of 0.975, the "1.96" of a two-sided 95% interval.
const z95 = 1.959963984540054

// Minimum sample sizes for a comparison against the baseline.
const (
	MinTTFTObservations = 20 // per arm, for the TTFT median difference
	MinSLOOutcomes      = 10 // outcomes with an objective per arm, for the attainment difference
)

// medianRanks returns the 1-based ranks of the order statistics bounding a distribution-free 95%
// confidence interval for the median of n > 0 observations: (n+1)/2 ± 1.96·√n/2, rounded
// outward and clamped to [1, n].
func medianRanks(n int) (lo, hi int) {
	half := z95 * math.Sqrt(float64(n)) / 2
	mid := float64(n+1) / 2
	lo = int(math.Floor(mid - half))
	hi = int(math.Ceil(mid + half))
	return max(lo, 1), min(hi, n)
}

// medianSE returns a standard error for the median of sorted (n > 0) derived from the width of
// its distribution-free 95% confidence interval.
func medianSE(sorted []float64) float64 {
	lo, hi := medianRanks(len(sorted))
	return (sorted[hi-1] - sorted[lo-1]) / (2 * z95)
}

// medianDiff compares the medians of two sorted samples: arm minus baseline.
func medianDiff(baseline, arm []float64) Interval {
	iv := Interval{N1: len(baseline), N2: len(arm)}
	if iv.N1 < MinTTFTObservations || iv.N2 < MinTTFTObservations {
		iv.Insufficient = true
		iv.Reason = fmt.Sprintf("need at least %d TTFT observations per arm", MinTTFTObservations)
		return iv
	}
	se1, se2 := medianSE(baseline), medianSE(arm)
	half := z95 * math.Sqrt(se1*se1+se2*se2)
	iv.Estimate = quantile.Sorted(arm, 0.5) - quantile.Sorted(baseline, 0.5)
	iv.Low, iv.High = iv.Estimate-half, iv.Estimate+half
	iv.Significant = iv.Low > 0 || iv.High < 0
	return iv
}

// wilson returns the Wilson score 95% interval (no continuity correction) for k successes out of
// n > 0 trials.
func wilson(k, n int) (lo, hi float64) {
	p, nf := float64(k)/float64(n), float64(n)
	z2 := z95 * z95
	denom := 1 + z2/nf
	center := (p + z2/(2*nf)) / denom
	half := z95 / denom * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(center-half, 0), min(center+half, 1)
}

// newcombe returns Newcombe's hybrid score 95% interval (method 10) for p1 − p2, where p1 = k1/n1
// and p2 = k2/n2 (n1, n2 > 0).
func newcombe(k1, n1, k2, n2 int) (est, lo, hi float64) {
	p1, p2 := float64(k1)/float64(n1), float64(k2)/float64(n2)
	l1, u1 := wilson(k1, n1)
	l2, u2 := wilson(k2, n2)
	est = p1 - p2
	lo = est - math.Sqrt((p1-l1)*(p1-l1)+(u2-p2)*(u2-p2))
	hi = est + math.Sqrt((u1-p1)*(u1-p1)+(p2-l2)*(p2-l2))
	return est, lo, hi
}

// attainmentDiff compares SLO attainment: arm (metA of nA) minus baseline (metB of nB).
func attainmentDiff(metB, nB, metA, nA int) Interval {
	iv := Interval{N1: nB, N2: nA}
	if nB < MinSLOOutcomes || nA < MinSLOOutcomes {
		iv.Insufficient = true
		iv.Reason = fmt.Sprintf("need at least %d outcomes with an SLO per arm", MinSLOOutcomes)
		return iv
	}
	iv.Estimate, iv.Low, iv.High = newcombe(metA, nA, metB, nB)
	iv.Significant = iv.Low > 0 || iv.High < 0
	return iv
}
