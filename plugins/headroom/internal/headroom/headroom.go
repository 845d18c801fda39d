// Package headroom implements the slo-headroom-tier-filter: it splits the candidates into endpoints
// predicted to meet the request's SLOs (positive tier) and the rest (negative tier), and keeps the
// positive tier except on a small share of cycles that explore the negative one.
package headroom

import (
	"context"
	"errors"
	"fmt"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// Type is the plugin type declared in the host configuration.
const Type = "slo-headroom-tier-filter"

// Params are the filter's parameters, decoded from JSON over Defaults.
type Params struct {
	// SLOBufferFactor scales the effective TPOT objective before it is compared with the predicted
	// TPOT, in (0, 10]; below 1 it demands margin, above 1 it tolerates a small overshoot.
	SLOBufferFactor float64 `json:"sloBufferFactor"`
	// EpsilonExploreNeg is the chance, in [0, 1], of keeping the negative tier when both tiers are
	// non-empty, so endpoints predicted to miss still get traffic and can show they recovered.
	EpsilonExploreNeg float64 `json:"epsilonExploreNeg"`
}

// Defaults returns llm-d's defaults: buffer factor 1.0, negative-tier exploration 0.01.
func Defaults() Params {
	return Params{SLOBufferFactor: 1.0, EpsilonExploreNeg: 0.01}
}

// Validate returns an error naming the first parameter outside its range.
func (p *Params) Validate() error {
	if err := sdk.CheckRangeOpenLow("sloBufferFactor", p.SLOBufferFactor, 0, 10); err != nil {
		return err
	}
	return sdk.CheckRange("epsilonExploreNeg", p.EpsilonExploreNeg, 0, 1)
}

// Filter is the slo-headroom-tier-filter. Its Configure (from sdk.Params) merges params over
// Defaults, validates them and swaps them in atomically, so it is safe against concurrent Filter
// calls; on error the previous parameters stay in force. The zero value is not usable; call New.
type Filter struct {
	sdk.Params[Params]
}

var _ sdk.Filter = (*Filter)(nil)

// New returns a filter configured with Defaults.
func New() *Filter {
	f := &Filter{}
	f.Init(Defaults)
	return f
}

// Type returns "slo-headroom-tier-filter".
func (f *Filter) Type() string { return Type }

// Description returns one line saying what the filter does.
func (f *Filter) Description() string {
	return "keeps endpoints predicted to meet the request's TTFT/TPOT SLOs; explores the others with a small probability"
}

// Filter keeps every endpoint when the request has no SLO or no endpoint has a valid prediction.
// Otherwise an endpoint is in the positive tier when it has a prediction and both its headrooms
// (heuristics.HeadroomOf with SLOBufferFactor) are non-negative, in the negative tier otherwise.
// When only one tier is non-empty it is kept; when both are, the negative tier is kept with
// probability EpsilonExploreNeg (drawn from the cycle's seed) and the positive tier otherwise.
func (f *Filter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	if c == nil {
		return sdk.FilterVerdict{}, errors.New("filtering: nil cycle")
	}
	n := len(c.Endpoints)
	if !c.Request.SLO.Any() {
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: "no SLO"}, nil
	}
	if !c.AnyPrediction() {
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: "no predictions"}, nil
	}
	p := f.Get()
	var pos, neg []int
	for i := range c.Endpoints {
		if h, ok := heuristics.HeadroomOf(&c.Request, &c.Endpoints[i], p.SLOBufferFactor); ok && h.Meets() {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	switch {
	case len(neg) == 0:
		return sdk.FilterVerdict{Kept: pos, Reason: fmt.Sprintf("positive tier only: all %d meet the SLO", n)}, nil
	case len(pos) == 0:
		return sdk.FilterVerdict{Kept: neg, Reason: fmt.Sprintf("negative tier only: none of %d meets the SLO", n)}, nil
	case p.EpsilonExploreNeg > 0 && sdk.Rand(c, Type).Float64() < p.EpsilonExploreNeg:
		return sdk.FilterVerdict{Kept: neg, Reason: fmt.Sprintf("explore negative tier: %d of %d miss the SLO", len(neg), n)}, nil
	}
	return sdk.FilterVerdict{Kept: pos, Reason: fmt.Sprintf("positive tier: %d of %d meet the SLO", len(pos), n)}, nil
}

// Reads declares the cycle fields the filter reads (sdk.Reader), so the host sends only those.
func (f *Filter) Reads() []string {
	return []string{"request", "endpoints.states.min_running_tpot_slo_ms", "endpoints.predictions"}
}
