package experiment

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMedianRanks(t *testing.T) {
	// (n+1)/2 ± 1.96·√n/2, rounded outward: n=20 → 10.5 ± 4.38 → [6.12, 14.88] → ranks 6, 15;
	// n=100 → 50.5 ± 9.80 → [40.70, 60.30] → 40, 61 (the textbook ranks for these n).
	for _, tc := range []struct{ n, lo, hi int }{
		{1, 1, 1}, {5, 1, 5}, {20, 6, 15}, {100, 40, 61},
	} {
		lo, hi := quantileRanks(tc.n, 0.5)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("quantileRanks(%d, 0.5) = %d, %d, want %d, %d", tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

func seq(from, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(from + i)
	}
	return s
}

func TestMedianDiff(t *testing.T) {
	// Samples 1..20 and 101..120: ranks 6 and 15 bound each median's CI, so each width is 9 and
	// se = 9/(2·1.96); the difference's half-width is 1.96·√2·9/(2·1.96) = 9/√2 ≈ 6.364.
	half := 9 / math.Sqrt2
	iv := medianDiff(seq(1, 20), seq(101, 20))
	if !near(iv.Estimate, 100, 1e-9) || !near(iv.Low, 100-half, 1e-9) || !near(iv.High, 100+half, 1e-9) {
		t.Errorf("got %+v, want 100 in [%.3f, %.3f]", iv, 100-half, 100+half)
	}
	if !iv.Significant || iv.Insufficient || iv.N1 != 20 || iv.N2 != 20 {
		t.Errorf("got %+v, want significant with n 20/20", iv)
	}

	// 1..20 against 2..21: difference 1, same half-width, so the interval holds 0.
	iv = medianDiff(seq(1, 20), seq(2, 20))
	if !near(iv.Estimate, 1, 1e-9) || !near(iv.High-iv.Low, 2*half, 1e-9) || iv.Significant {
		t.Errorf("got %+v, want 1 ± %.3f, not significant", iv, half)
	}
}

func TestMedianDiffInsufficient(t *testing.T) {
	iv := medianDiff(seq(1, 19), seq(1, 40))
	want := Interval{N1: 19, N2: 40, Insufficient: true, Reason: "need at least 20 TTFT observations per arm"}
	if iv != want {
		t.Errorf("got %+v, want %+v", iv, want)
	}
}

func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{81, 263, 0.2553, 0.3662}, // Newcombe (1998) example; computed 0.25529, 0.36621
		{0, 10, 0, 0.2775},        // upper bound z²/(n+z²) = 3.8415/13.8415
		{10, 10, 0.7225, 1},
	} {
		lo, hi := wilson(tc.k, tc.n)
		if !near(lo, tc.lo, 5e-5) || !near(hi, tc.hi, 5e-5) {
			t.Errorf("wilson(%d, %d) = %.5f, %.5f, want %.4f, %.4f", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestNewcombe(t *testing.T) {
	// Method 10 values published in Newcombe (1998), Table II; computed 0.05243/0.33387,
	// 0.17052/0.80902, -0.03814/0.19256.
	for _, tc := range []struct {
		k1, n1, k2, n2 int
		est, lo, hi    float64
	}{
		{56, 70, 48, 80, 0.2, 0.0524, 0.3339},
		{9, 10, 3, 10, 0.6, 0.1705, 0.8090},
		{5, 56, 0, 29, 5.0 / 56, -0.0381, 0.1926},
	} {
		est, lo, hi := newcombe(tc.k1, tc.n1, tc.k2, tc.n2)
		if !near(est, tc.est, 1e-12) || !near(lo, tc.lo, 5e-5) || !near(hi, tc.hi, 5e-5) {
			t.Errorf("newcombe(%d/%d − %d/%d) = %.5f [%.5f, %.5f], want %.4f [%.4f, %.4f]",
				tc.k1, tc.n1, tc.k2, tc.n2, est, lo, hi, tc.est, tc.lo, tc.hi)
		}
	}
}

func TestAttainmentDiff(t *testing.T) {
	// Arm 48/80 against baseline 56/70: −0.2 in [−0.3339, −0.0524], significant.
	iv := attainmentDiff(56, 70, 48, 80)
	if !near(iv.Estimate, -0.2, 1e-12) || !near(iv.Low, -0.3339, 5e-5) || !near(iv.High, -0.0524, 5e-5) {
		t.Errorf("got %+v, want −0.2 in [−0.3339, −0.0524]", iv)
	}
	if !iv.Significant || iv.N1 != 70 || iv.N2 != 80 {
		t.Errorf("got %+v, want significant, n_baseline 70, n_arm 80", iv)
	}
	if iv := attainmentDiff(5, 10, 5, 10); iv.Estimate != 0 || iv.Significant {
		t.Errorf("equal attainment: got %+v, want 0, not significant", iv)
	}
	want := Interval{N1: 10, N2: 9, Insufficient: true, Reason: "need at least 10 outcomes with an SLO per arm"}
	if iv := attainmentDiff(5, 10, 9, 9); iv != want {
		t.Errorf("9 outcomes on the arm: got %+v, want %+v", iv, want)
	}
}

// TestP95Diff: samples 1..200 and 11..210: the p95 ranks are (201)·0.95 ± 1.96·√(200·0.95·0.05)
// = 190.95 ± 6.04, so ranks 184 and 197 bound each interval: width 13, se 13/(2·1.96); the
// difference's half-width is 13/√2 ≈ 9.19 around 10, significant. Fewer than 100 observations on
// a side: insufficient.
func TestP95Diff(t *testing.T) {
	half := 13 / math.Sqrt2
	iv := p95Diff(seq(1, 200), seq(11, 200))
	if !near(iv.Estimate, 10, 1e-9) || !near(iv.Low, 10-half, 1e-9) || !near(iv.High, 10+half, 1e-9) || !iv.Significant {
		t.Errorf("got %+v, want 10 in [%.3f, %.3f], significant", iv, 10-half, 10+half)
	}
	if iv := p95Diff(seq(1, 99), seq(1, 200)); !iv.Insufficient || iv.Reason != "need at least 100 TTFT observations per arm" {
		t.Errorf("99 observations: %+v, want insufficient", iv)
	}
}
