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
	MinTTFTObservations     = 20  // per arm, for the TTFT median difference
	MinTTFTTailObservations = 100 // per arm, for the TTFT p95 difference: 5 observations above it
	MinSLOOutcomes          = 10  // outcomes with an objective per arm, for the attainment difference
)

// quantileRanks returns the 1-based ranks of the order statistics bounding a distribution-free
// 95% confidence interval for the q-quantile of n > 0 observations: (n+1)·q ± 1.96·√(n·q·(1−q))
// (the normal approximation of the binomial count below the quantile), rounded outward and
// clamped to [1, n]. For the median it is (n+1)/2 ± 1.96·√n/2.
func quantileRanks(n int, q float64) (lo, hi int) {
	half := z95 * math.Sqrt(float64(n)*q*(1-q))
	mid := float64(n+1) * q
	lo = int(math.Floor(mid - half))
	hi = int(math.Ceil(mid + half))
	return max(lo, 1), min(hi, n)
}

// quantileSE returns a standard error for the q-quantile of sorted (n > 0) derived from the width
// of its distribution-free 95% confidence interval.
func quantileSE(sorted []float64, q float64) float64 {
	lo, hi := quantileRanks(len(sorted), q)
	return (sorted[hi-1] - sorted[lo-1]) / (2 * z95)
}

// medianDiff compares the medians of two sorted samples: arm minus baseline.
func medianDiff(baseline, arm []float64) Interval {
	return quantileDiff(baseline, arm, 0.5, MinTTFTObservations)
}

// p95Diff compares the 95th percentiles of two sorted samples: arm minus baseline. The tail is
// where routing decides most (a queue avoided), and where a short run shows a difference first.
func p95Diff(baseline, arm []float64) Interval {
	return quantileDiff(baseline, arm, 0.95, MinTTFTTailObservations)
}

// quantileDiff compares the q-quantiles of two sorted samples, arm minus baseline, each side's
// standard error from its distribution-free interval, combined as independent; it needs least
// observations per side.
func quantileDiff(baseline, arm []float64, q float64, least int) Interval {
	iv := Interval{N1: len(baseline), N2: len(arm)}
	if iv.N1 < least || iv.N2 < least {
		iv.Insufficient = true
		iv.Reason = fmt.Sprintf("need at least %d TTFT observations per arm", least)
		return iv
	}
	se1, se2 := quantileSE(baseline, q), quantileSE(arm, q)
	half := z95 * math.Sqrt(se1*se1+se2*se2)
	iv.Estimate = quantile.Sorted(arm, q) - quantile.Sorted(baseline, q)
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
