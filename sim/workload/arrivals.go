package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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

// AtRate returns a copy of w whose arrival times are all multiplied by one factor so that its
// rate, w.Rate, becomes rate (fleet-wide requests/s): the same requests in the same order with
// the same relative arrival pattern, only faster or slower. For a trace w.Rate is the replay's
// mean rate, (n−1) / (last arrival − first arrival), which the copy therefore has exactly; for a
// generated workload it is the rate it was generated for, and the stages (the production
// ladder's included) scale with the arrivals. w is not modified; the copy shares the requests'
// read-only block slices. It fails when rate or w.Rate is not positive and finite.
func (w *Workload) AtRate(rate float64) (*Workload, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate must be a finite number > 0 requests/s, got %v", rate)
	}
	if !(w.Rate > 0) || math.IsInf(w.Rate, 0) {
		return nil, fmt.Errorf("the workload has no rate to scale (%d requests, rate %v)", len(w.Requests), w.Rate)
	}
	k := w.Rate / rate // new time = old time × k
	scale := func(d time.Duration) time.Duration { return time.Duration(math.Round(float64(d) * k)) }
	out := &Workload{Name: w.Name, Requests: slices.Clone(w.Requests), Rate: rate, Stages: slices.Clone(w.Stages)}
	for i := range out.Requests {
		out.Requests[i].Arrival = scale(out.Requests[i].Arrival)
	}
	for i := range out.Stages {
		s := &out.Stages[i]
		s.Start, s.Duration, s.Rate = scale(s.Start), scale(s.Duration), s.Rate/k
	}
	return out, nil
}
