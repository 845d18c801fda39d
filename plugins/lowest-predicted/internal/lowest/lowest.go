// Package lowest implements the lowest-predicted-picker, Llumnix's metricBasedSelector: it orders
// a cycle's endpoints by the producer's predicted latency, lowest first — TTFT for a prefill
// stage, TPOT for a decode stage — ignoring the scorers' scores, and returns the whole order so
// the proxy can fail over down it.
package lowest

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// Type is the plugin type declared in the host configuration.
const Type = "lowest-predicted-picker"

// Picker is the lowest-predicted-picker. Its Configure (from sdk.Params) merges params over
// Defaults, validates them and swaps them in atomically. The zero value is not usable; call New.
type Picker struct {
	sdk.Params[Params]
}

var _ sdk.Picker = (*Picker)(nil)

// New returns a picker configured with Defaults.
func New() *Picker {
	p := &Picker{}
	p.Init(Defaults)
	return p
}

// Type returns "lowest-predicted-picker".
func (p *Picker) Type() string { return Type }

// Description returns one line saying what the picker does.
func (p *Picker) Description() string {
	return "orders endpoints by the producer's predicted TTFT (or TPOT), lowest first, as Llumnix's metric-based selector"
}

// Reads declares that the picker reads the predictions only.
func (p *Picker) Reads() []string { return []string{"endpoints.predictions"} }

// Pick returns every index of c.Endpoints, the lowest predicted latency first. Equal predictions
// are ordered by a draw from sdk.Rand(c, Type), so tied endpoints share the load and the same
// cycle always gives the same order. An endpoint without the prediction — not valid, or a TPOT
// of 0 (unknown) — comes after every predicted one, in random order: with no prediction at all
// (a cold producer) the order is a uniform random permutation, which spreads the load until the
// producer predicts. The scores are not read.
func (p *Picker) Pick(_ context.Context, c *sdk.Cycle, scores []float64) ([]int, error) {
	if c == nil {
		return nil, errors.New("picking: nil cycle")
	}
	if len(scores) != len(c.Endpoints) {
		return nil, fmt.Errorf("picking: got %d scores for %d endpoints, want one per endpoint", len(scores), len(c.Endpoints))
	}
	metric := p.Get().Metric
	keys := make([]float64, len(c.Endpoints))
	for i, e := range c.Endpoints {
		keys[i] = math.NaN() // ranks last
		if v, ok := predicted(e.Prediction, metric); ok {
			keys[i] = -v // RankByScore puts the highest first
		}
	}
	return heuristics.RankByScore(keys, sdk.Rand(c, Type)), nil
}

// predicted is the prediction of metric, and whether there is one.
func predicted(pr sdk.Prediction, metric string) (float64, bool) {
	v := pr.TTFTMs
	if metric == MetricTPOT {
		v = pr.TPOTMs
	}
	return v, pr.Valid && v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v)
}
