package soak

import "math"

// point is one sample: at minutes from the start of the load, value v.
type point struct{ at, v float64 }

// series are the samples of one quantity, in time order.
type series []point

// seriesOf returns the values of samples that value reads, leaving out those it reads as 0 (not
// read).
func seriesOf(samples []Sample, value func(Sample) float64) series {
	var out series
	for _, s := range samples {
		if v := value(s); v != 0 {
			out = append(out, point{s.AtMin, v})
		}
	}
	return out
}

// Trend is one quantity sampled through the run: where it started and ended, its peak, and how
// fast it grew once warm.
type Trend struct {
	// Start and End are the first and last samples, Max the largest.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Max   float64 `json:"max"`
	// SlopePerMin is the least-squares slope of the samples taken after the warm-up, per minute;
	// Fitted is their number (fewer than 2: no slope, 0).
	SlopePerMin float64 `json:"slope_per_min"`
	Fitted      int     `json:"fitted"`
}

// trend summarizes s, fitting its slope over the samples at or after warmup minutes.
func trend(s series, warmup float64) Trend {
	if len(s) == 0 {
		return Trend{}
	}
	t := Trend{Start: round3(s[0].v), End: round3(s[len(s)-1].v), Max: s[0].v}
	var warm series
	for _, p := range s {
		t.Max = max(t.Max, p.v)
		if p.at >= warmup {
			warm = append(warm, p)
		}
	}
	t.Max = round3(t.Max)
	t.SlopePerMin, t.Fitted = round3(slope(warm)), len(warm)
	return t
}

// slope is the least-squares slope of v over at: Σ(at−āt)(v−v̄) / Σ(at−āt)²; 0 for fewer than
// two points or a single time.
func slope(s series) float64 {
	if len(s) < 2 {
		return 0
	}
	var mx, my float64
	for _, p := range s {
		mx += p.at
		my += p.v
	}
	mx /= float64(len(s))
	my /= float64(len(s))
	var sxy, sxx float64
	for _, p := range s {
		sxy += (p.at - mx) * (p.v - my)
		sxx += (p.at - mx) * (p.at - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// round3 rounds x to three decimals, for the JSON.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
