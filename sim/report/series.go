package report

import (
	"slices"
	"time"

	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/sim/stats"
)

// point is one data point of a chart, in data units.
type point struct{ x, y float64 }

// bucket is one time slice of the TTFT-over-time chart: the TTFT percentiles (ms) of the served
// requests that arrived in it.
type bucket struct {
	midS     float64 // bucket midpoint, seconds since the start of the run
	p50, p95 float64
	n        int // served requests in the bucket; 0 means no line point
}

// timeBuckets splits [start, end] into n equal slices by arrival time and computes the TTFT p50
// and p95 of the served requests in each. A request arriving at end falls in the last slice, shed
// ones are skipped. n < 1 or end <= start yields a single slice.
func timeBuckets(outs []stats.Outcome, start, end time.Duration, n int) []bucket {
	if n < 1 || end <= start {
		n = 1
	}
	span := end - start
	vals := make([][]float64, n)
	for i := range outs {
		o := &outs[i]
		if o.Shed {
			continue
		}
		k := 0
		if span > 0 {
			k = int(float64(o.Arrival-start) / float64(span) * float64(n))
		}
		k = min(max(k, 0), n-1)
		vals[k] = append(vals[k], msOf(o.TTFT))
	}
	width := float64(span) / float64(n)
	out := make([]bucket, n)
	for k, v := range vals {
		mid := time.Duration(float64(start) + width*(float64(k)+0.5))
		out[k] = bucket{midS: mid.Seconds(), n: len(v)}
		if len(v) > 0 {
			slices.Sort(v)
			out[k].p50, out[k].p95 = quantile.Sorted(v, 0.50), quantile.Sorted(v, 0.95)
		}
	}
	return out
}

// cdfPoints returns the empirical CDF of values as (value, fraction ≤ value) points, thinned to at
// most maxPoints evenly spaced ranks that always include the first and last. values is not modified.
func cdfPoints(values []float64, maxPoints int) []point {
	n := len(values)
	if n == 0 || maxPoints < 1 {
		return nil
	}
	v := slices.Clone(values)
	slices.Sort(v)
	at := func(i int) point { return point{v[i], float64(i+1) / float64(n)} }
	if n <= maxPoints {
		pts := make([]point, n)
		for i := range v {
			pts[i] = at(i)
		}
		return pts
	}
	if maxPoints == 1 {
		return []point{at(n - 1)}
	}
	pts := make([]point, maxPoints)
	for k := range maxPoints {
		pts[k] = at(k * (n - 1) / (maxPoints - 1))
	}
	return pts
}

// subsample returns at most limit of pts, taken at an even stride from the first (deterministic).
func subsample(pts []point, limit int) []point {
	if len(pts) <= limit {
		return pts
	}
	out := make([]point, limit)
	for k := range limit {
		out[k] = pts[k*len(pts)/limit]
	}
	return out
}

// served returns the TTFT and E2E (ms) of the served requests and the number shed.
func served(outs []stats.Outcome) (ttft, e2e []float64, shed int) {
	for i := range outs {
		if outs[i].Shed {
			shed++
			continue
		}
		ttft = append(ttft, msOf(outs[i].TTFT))
		e2e = append(e2e, msOf(outs[i].E2E))
	}
	return ttft, e2e, shed
}

// predictions returns (actual, predicted) TTFT in ms for served requests with a valid prediction.
func predictions(outs []stats.Outcome) []point {
	var pts []point
	for i := range outs {
		if o := &outs[i]; !o.Shed && o.Predicted.Valid {
			pts = append(pts, point{msOf(o.TTFT), o.Predicted.TTFTMs})
		}
	}
	return pts
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
