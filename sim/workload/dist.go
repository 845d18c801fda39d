package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Shape names a length distribution's family.
type Shape int

const (
	// Fixed always yields Mean.
	Fixed Shape = iota
	// Normal draws N(Mean, StdDev²), clamps it to [Min, Max] and rounds: inference-perf's
	// generate_distribution ("normal"), the only shape its shared-prefix generator had in March 2026.
	Normal
	// LogNormal draws a log-normal whose σ matches Mean and StdDev (σ² = ln(1+StdDev²/Mean²), as
	// inference-perf's lognormal does), clamps it to [Min, Max] and rounds; μ is solved so the
	// clamped distribution's mean is Mean, so the tail cut at Max does not pull the mean down.
	LogNormal
	// Uniform draws uniformly from the integers Min..Max.
	Uniform
)

// Dist is a distribution of token counts.
type Dist struct {
	Shape    Shape
	Mean     float64
	StdDev   float64
	Min, Max int
}

// Spread returns a Normal with standard deviation spread clamped to mean ± spread — how this
// package reads the blog's "question_len=30 +/- 9" (see README).
func Spread(mean, spread float64) Dist {
	return Dist{Shape: Normal, Mean: mean, StdDev: spread,
		Min: int(math.Round(mean - spread)), Max: int(math.Round(mean + spread))}
}

// Validate reports a distribution that cannot be sampled.
func (d Dist) Validate() error {
	switch {
	case d.Shape < Fixed || d.Shape > Uniform:
		return fmt.Errorf("unknown shape %d", d.Shape)
	case d.Shape == Fixed && d.Mean < 1:
		return fmt.Errorf("fixed length must be at least 1, got %v", d.Mean)
	case d.Shape == Fixed:
		return nil
	case d.Min < 1 || d.Max < d.Min:
		return fmt.Errorf("bounds must satisfy 1 <= min <= max, got [%d, %d]", d.Min, d.Max)
	case d.Shape != Uniform && (d.Mean < float64(d.Min) || d.Mean > float64(d.Max)):
		return fmt.Errorf("mean %v outside [%d, %d]", d.Mean, d.Min, d.Max)
	case d.StdDev < 0:
		return fmt.Errorf("standard deviation must be >= 0, got %v", d.StdDev)
	}
	return nil
}

// sampler draws from a Dist; built once so LogNormal's μ is solved once.
type sampler struct {
	d         Dist
	mu, sigma float64
}

func newSampler(d Dist) (*sampler, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	s := &sampler{d: d}
	if d.Shape == LogNormal {
		if d.StdDev == 0 {
			s.d.Shape = Fixed
			return s, nil
		}
		s.sigma = math.Sqrt(math.Log1p(d.StdDev * d.StdDev / (d.Mean * d.Mean)))
		s.mu = solveLogNormalMu(d.Mean, s.sigma, float64(d.Min), float64(d.Max))
	}
	return s, nil
}

func (s *sampler) draw(r *rand.Rand) int {
	d := s.d
	var x float64
	switch d.Shape {
	case Fixed:
		return int(math.Round(d.Mean))
	case Uniform:
		return d.Min + r.IntN(d.Max-d.Min+1)
	case Normal:
		x = d.Mean + d.StdDev*r.NormFloat64()
	case LogNormal:
		x = math.Exp(s.mu + s.sigma*r.NormFloat64())
	}
	x = math.Round(math.Min(math.Max(x, float64(d.Min)), float64(d.Max)))
	return int(x)
}

// clampedLogNormalMean is E[clamp(X, lo, hi)] for X = exp(N(mu, sigma²)).
func clampedLogNormalMean(mu, sigma, lo, hi float64) float64 {
	phi := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	zl := (math.Log(lo) - mu) / sigma
	zh := (math.Log(hi) - mu) / sigma
	body := math.Exp(mu+sigma*sigma/2) * (phi(zh-sigma) - phi(zl-sigma))
	return lo*phi(zl) + body + hi*(1-phi(zh))
}

// solveLogNormalMu finds μ such that the clamped mean equals mean (it is increasing in μ).
func solveLogNormalMu(mean, sigma, lo, hi float64) float64 {
	a, b := math.Log(lo)-10*sigma-10, math.Log(hi)+10*sigma+10
	for range 200 {
		m := (a + b) / 2
		if clampedLogNormalMean(m, sigma, lo, hi) < mean {
			a = m
		} else {
			b = m
		}
	}
	return (a + b) / 2
}
