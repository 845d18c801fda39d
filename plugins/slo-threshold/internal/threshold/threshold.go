// Package threshold implements the slo-threshold-filter, Llumnix's metric-based filter: it blocks
// the endpoints predicted to exceed the request's latency objective times a dispatch threshold,
// TTFT and TPOT each; when none is left the request has no available endpoint.
package threshold

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Type is the plugin type declared in the host configuration.
const Type = "slo-threshold-filter"

// Filter is the slo-threshold-filter. Its Configure (from sdk.Params) merges params over Defaults,
// validates them and swaps them in atomically. The zero value is not usable; call New.
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

// Type returns "slo-threshold-filter".
func (f *Filter) Type() string { return Type }

// Description returns one line saying what the filter does.
func (f *Filter) Description() string {
	return "blocks the endpoints predicted to exceed the request's TTFT or TPOT objective × a dispatch threshold, as Llumnix's metric-based filter"
}

// Reads declares the request (its SLO) and the predictions.
func (f *Filter) Reads() []string { return []string{"request", "endpoints.predictions"} }

// Filter keeps the endpoints whose predictions are within the request's objectives times the
// thresholds: predicted TTFT ≤ ttft_slo × ttftThreshold, and predicted TPOT ≤ tpot_slo ×
// tpotThreshold. An objective the request does not set is not checked (no SLO: every endpoint is
// kept). An endpoint is judged only on what is predicted: without a valid prediction, or with a
// TPOT of 0 (the producer's "no TPOT estimate"), that objective does not block it — a cold
// producer must not refuse every request. An empty verdict is the pipeline's "filter … kept no
// endpoint", which the router answers 503, as Llumnix answers ErrorNoAvailableEndpoint.
func (f *Filter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	if c == nil {
		return sdk.FilterVerdict{}, errors.New("filtering: nil cycle")
	}
	p := f.Get()
	slo := c.Request.SLO
	ttftBound, tpotBound := slo.TTFTMs*p.TTFTThreshold, slo.TPOTMs*p.TPOTThreshold
	var bounds []string
	if slo.TTFTMs > 0 {
		bounds = append(bounds, fmt.Sprintf("TTFT ≤ %g ms", ttftBound))
	}
	if slo.TPOTMs > 0 {
		bounds = append(bounds, fmt.Sprintf("TPOT ≤ %g ms", tpotBound))
	}
	kept := make([]int, 0, len(c.Endpoints))
	for i, e := range c.Endpoints {
		pr := e.Prediction
		switch {
		case !pr.Valid:
		case slo.TTFTMs > 0 && pr.TTFTMs > 0 && pr.TTFTMs > ttftBound:
			continue
		case slo.TPOTMs > 0 && pr.TPOTMs > 0 && pr.TPOTMs > tpotBound:
			continue
		}
		kept = append(kept, i)
	}
	switch {
	case len(bounds) == 0:
		return sdk.FilterVerdict{Kept: kept, Reason: "no SLO: all kept"}, nil
	case len(kept) == 0:
		return sdk.FilterVerdict{Kept: kept, Reason: "no endpoint predicted within " + strings.Join(bounds, ", ")}, nil
	}
	return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("%d of %d predicted within %s", len(kept), len(c.Endpoints), strings.Join(bounds, ", "))}, nil
}
