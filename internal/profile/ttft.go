package profile

import (
	"cmp"
	"fmt"
	"slices"
)

// TTFT is a TTFT profile read at one percentile: the latency in ms of a prefill of each
// profiled prompt length, in increasing order of tokens.
type TTFT struct {
	Metadata Metadata
	tokens   []float64
	ms       []float64
}

// ParseTTFT reads a TTFT profile (results of tokens_num and the percentiles) at percentile.
// Every point must carry tokens_num and the percentile; two points of the same tokens_num are
// refused, and so is a latency that falls by more than 5 % as the prompt grows (a profile whose
// longer prefill is faster is a measurement to redo, and would make the interpolation reward
// longer prompts).
func ParseTTFT(name string, data []byte, percentile string) (*TTFT, error) {
	if err := checkPercentile(percentile); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	md, results, err := readFile(name, data)
	if err != nil {
		return nil, err
	}
	type point struct{ tokens, ms float64 }
	pts := make([]point, len(results))
	for i, r := range results {
		if pts[i].tokens, err = count(name, i, r, "tokens_num"); err != nil {
			return nil, err
		}
		if pts[i].ms, err = field(name, i, r, percentile); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(pts, func(a, b point) int { return cmp.Compare(a.tokens, b.tokens) })
	t := &TTFT{Metadata: md}
	for i, p := range pts {
		if i > 0 && p.tokens == pts[i-1].tokens {
			return nil, fmt.Errorf("%s: tokens_num %v is profiled twice", name, p.tokens)
		}
		if i > 0 && falls(pts[i-1].ms, p.ms) {
			return nil, fmt.Errorf("%s: %s falls from %v ms at tokens_num %v to %v ms at %v: a longer prefill must not be faster", name, percentile, pts[i-1].ms, pts[i-1].tokens, p.ms, p.tokens)
		}
		t.tokens, t.ms = append(t.tokens, p.tokens), append(t.ms, p.ms)
	}
	return t, nil
}

// Predict is the latency of a prefill of tokens: linear between the two profiled points around
// it; below the first point the first point's latency (a prefill is never cheaper than the
// shortest one profiled: fixed costs dominate there); beyond the last point the last segment's
// slope goes on, never below the last point (prefill time grows with the tokens computed, and clamping would call a prompt
// twice the longest profiled as fast as it). A profile of one point predicts that point.
// Llumnix's InterpolationPredictor answers an error outside the profiled range instead, which its
// scheduler turns into an infinite latency, so that an endpoint loaded beyond the profile is
// never picked; here it gets an estimate, and the SLO filters decide.
func (t *TTFT) Predict(tokens float64) float64 { return interp1(t.tokens, t.ms, tokens) }

// interp1 interpolates ys over the increasing xs at x: clamped below, extrapolated along the last
// segment above.
func interp1(xs, ys []float64, x float64) float64 {
	i, j, w := locate(xs, x)
	return along(ys[i], ys[j], w)
}

// along is (1 − w)·a + w·b; beyond b (w > 1) never below b: a last segment that falls (within
// the noise the reader tolerates) would otherwise predict ever less for ever more load.
func along(a, b, w float64) float64 {
	v := a + w*(b-a)
	if w > 1 && v < b {
		return b
	}
	return v
}

// locate places x on the increasing xs: its value is (1 − w)·v[i] + w·v[j]. Below xs[0] it is
// xs[0]'s (w = 0); beyond the last point w runs past 1 along the last segment; between two
// points w is x's fraction of the way from one to the next.
func locate(xs []float64, x float64) (i, j int, w float64) {
	n := len(xs)
	switch {
	case n == 1 || x <= xs[0]:
		return 0, 0, 0
	case x >= xs[n-1]:
		i, j = n-2, n-1
	default:
		j, _ = slices.BinarySearch(xs, x) // xs[j-1] < x <= xs[j]
		i = j - 1
	}
	return i, j, (x - xs[i]) / (xs[j] - xs[i])
}
