// Package staleness implements the staleness-filter, Llumnix's staleness filter: it blocks the
// endpoints whose engine state is older than a bound, so that no decision rests on gauges that
// no longer describe the engine.
package staleness

import (
	"context"
	"errors"
	"fmt"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// Type is the plugin type declared in the host configuration.
const Type = "staleness-filter"

// Filter is the staleness-filter. Its Configure (from sdk.Params) merges params over Defaults,
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

// Type returns "staleness-filter".
func (f *Filter) Type() string { return Type }

// Description returns one line saying what the filter does.
func (f *Filter) Description() string {
	return "blocks the endpoints whose scraped state is older than maxMetricsAgeMs, as Llumnix's staleness filter"
}

// Reads declares the one column the filter reads.
func (f *Filter) Reads() []string { return []string{"endpoints.states.metrics_age_ms"} }

// Filter keeps the endpoints whose metrics_age_ms is at most maxMetricsAgeMs. When every endpoint
// is stale it keeps them all and says so: nothing fresher is there to choose, and the router's own
// in-flight accounting is fresh whatever the scrapes do, so refusing every request over a
// fleet-wide scrape hiccup would be the worse answer (Llumnix, whose state is pushed by the
// engines, has no such case).
func (f *Filter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	if c == nil {
		return sdk.FilterVerdict{}, errors.New("filtering: nil cycle")
	}
	bound := f.Get().MaxMetricsAgeMs
	kept := make([]int, 0, len(c.Endpoints))
	for i, e := range c.Endpoints {
		if e.State.MetricsAgeMs <= bound {
			kept = append(kept, i)
		}
	}
	n := len(c.Endpoints)
	switch {
	case len(kept) == n:
		return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("all %d fresh (≤ %g ms)", n, bound)}, nil
	case len(kept) == 0:
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: fmt.Sprintf("all %d stale (> %g ms): all kept, nothing fresher", n, bound)}, nil
	}
	return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("%d of %d fresh (≤ %g ms)", len(kept), n, bound)}, nil
}
