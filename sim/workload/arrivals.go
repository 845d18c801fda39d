package workload

import (
	"math/rand/v2"
	"time"
)

// poissonArrivals returns n arrival times of a Poisson process with the given rate (req/s):
// exponential gaps, the first one after time zero.
func poissonArrivals(r *rand.Rand, n int, rate float64) []time.Duration {
	out := make([]time.Duration, n)
	t := 0.0
	for i := range out {
		t += r.ExpFloat64() / rate
		out[i] = seconds(t)
	}
	return out
}

// stagedArrivals draws a Poisson process whose rate is constant within each stage (a
// piecewise-constant, non-homogeneous Poisson process: at a stage boundary the next gap is
// redrawn at the new rate, which memorylessness makes exact). The stage list repeats until n
// arrivals have been drawn; n <= 0 stops at the end of the list.
func stagedArrivals(r *rand.Rand, n int, stages []Stage) []time.Duration {
	var out []time.Duration
	if n > 0 {
		out = make([]time.Duration, 0, n)
	}
	var cycle time.Duration
	for _, s := range stages {
		cycle += s.Duration
	}
	positive := false
	for _, s := range stages {
		positive = positive || (s.Rate > 0 && s.Duration > 0)
	}
	if cycle <= 0 || !positive {
		return out
	}
	for rep := 0; ; rep++ {
		base := time.Duration(rep) * cycle
		for _, s := range stages {
			start := (base + s.Start).Seconds()
			end := start + s.Duration.Seconds()
			if s.Rate <= 0 {
				continue
			}
			t := start
			for {
				t += r.ExpFloat64() / s.Rate
				if t >= end {
					break
				}
				out = append(out, seconds(t))
				if n > 0 && len(out) == n {
					return out
				}
			}
		}
		if n <= 0 {
			return out
		}
	}
}
