package profile

import (
	"fmt"
	"slices"
)

// TPOT is a TPOT profile read at one percentile: the latency in ms of a decode step over a grid
// of decode batch sizes × tokens per request.
type TPOT struct {
	Metadata Metadata
	batch    []float64   // increasing
	tokens   []float64   // increasing
	ms       [][]float64 // ms[b][t]
}

// ParseTPOT reads a TPOT profile (results of batch_size, tokens_per_request and the
// percentiles) at percentile. The points must form a whole grid — every profiled batch size with
// every profiled tokens_per_request, once — since bilinear interpolation needs the four corners
// around every prediction; and the latency must not fall by more than 5 % as either grows (a larger batch or a
// longer context is never faster per token: a profile that says so is a measurement to redo).
func ParseTPOT(name string, data []byte, percentile string) (*TPOT, error) {
	if err := checkPercentile(percentile); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	md, results, err := readFile(name, data)
	if err != nil {
		return nil, err
	}
	type key struct{ b, t float64 }
	at := map[key]float64{}
	t := &TPOT{Metadata: md}
	for i, r := range results {
		var k key
		if k.b, err = count(name, i, r, "batch_size"); err != nil {
			return nil, err
		}
		if k.t, err = count(name, i, r, "tokens_per_request"); err != nil {
			return nil, err
		}
		v, err := field(name, i, r, percentile)
		if err != nil {
			return nil, err
		}
		if _, dup := at[k]; dup {
			return nil, fmt.Errorf("%s: batch_size %v with tokens_per_request %v is profiled twice", name, k.b, k.t)
		}
		at[k] = v
		if !slices.Contains(t.batch, k.b) {
			t.batch = append(t.batch, k.b)
		}
		if !slices.Contains(t.tokens, k.t) {
			t.tokens = append(t.tokens, k.t)
		}
	}
	slices.Sort(t.batch)
	slices.Sort(t.tokens)
	t.ms = make([][]float64, len(t.batch))
	for bi, b := range t.batch {
		t.ms[bi] = make([]float64, len(t.tokens))
		for ti, tok := range t.tokens {
			v, ok := at[key{b, tok}]
			if !ok {
				return nil, fmt.Errorf("%s: batch_size %v with tokens_per_request %v is not profiled: the points must form a grid (batch sizes %v × tokens_per_request %v)", name, b, tok, t.batch, t.tokens)
			}
			if bi > 0 && falls(t.ms[bi-1][ti], v) {
				return nil, fmt.Errorf("%s: %s falls from %v to %v ms as batch_size grows from %v to %v at tokens_per_request %v: a larger batch must not be faster per token", name, percentile, t.ms[bi-1][ti], v, t.batch[bi-1], b, tok)
			}
			if ti > 0 && falls(t.ms[bi][ti-1], v) {
				return nil, fmt.Errorf("%s: %s falls from %v to %v ms as tokens_per_request grows from %v to %v at batch_size %v: a longer context must not be faster per token", name, percentile, t.ms[bi][ti-1], v, t.tokens[ti-1], tok, b)
			}
			t.ms[bi][ti] = v
		}
	}
	return t, nil
}

// Predict is the latency of a decode step at batch size and tokens per request: bilinear
// between the four profiled corners around it — linear along tokens per request at the two
// batch sizes, then along the batch size — with each axis clamped below its first point and
// extrapolated along its last segment beyond its last (as TTFT.Predict, and for the same
// reasons). A grid one point wide along an axis is constant along it.
func (t *TPOT) Predict(batch, tokens float64) float64 {
	b0, b1, wb := locate(t.batch, batch)
	t0, t1, wt := locate(t.tokens, tokens)
	at := func(b int) float64 { return along(t.ms[b][t0], t.ms[b][t1], wt) }
	return along(at(b0), at(b1), wb)
}
