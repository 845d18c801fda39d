// Package schedulability implements the schedulability-filter, Llumnix's schedulability filter: it
// blocks the endpoints an operator marked as taking no new requests (draining before maintenance,
// warming up, being debugged) with an endpoint label, while they stay in the fleet, scraped and
// finishing what they hold.
package schedulability

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Type is the plugin type declared in the host configuration.
const Type = "schedulability-filter"

// Filter is the schedulability-filter. Its Configure (from sdk.Params) merges params over Defaults,
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

// Type returns "schedulability-filter".
func (f *Filter) Type() string { return Type }

// Description returns one line saying what the filter does.
func (f *Filter) Description() string {
	return "blocks the endpoints whose label marks them unschedulable (foresight.io/schedulable=false), as Llumnix's schedulability filter"
}

// Reads declares the one column the filter reads.
func (f *Filter) Reads() []string { return []string{"endpoints.labels"} }

// Filter keeps the endpoints whose label is absent or holds a value other than the blocked ones.
// When every endpoint is unschedulable the verdict is empty: the pipeline then has no candidate
// and the router answers 503, as Llumnix answers ErrorNoAvailableEndpoint. Unlike a stale scrape,
// the label is the operator's explicit word that an endpoint must take no new work, so overriding
// it for all of them would be wrong.
func (f *Filter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	if c == nil {
		return sdk.FilterVerdict{}, errors.New("filtering: nil cycle")
	}
	p := f.Get()
	kept := make([]int, 0, len(c.Endpoints))
	for i, e := range c.Endpoints {
		if v, ok := e.Labels[p.Label]; !ok || !slices.Contains(p.BlockedValues, v) {
			kept = append(kept, i)
		}
	}
	n := len(c.Endpoints)
	switch {
	case len(kept) == n:
		return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("all %d schedulable", n)}, nil
	case len(kept) == 0:
		return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("all %d unschedulable (%s in %q)", n, p.Label, p.BlockedValues)}, nil
	}
	return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("%d of %d schedulable (%d with %s in %q)", len(kept), n, n-len(kept), p.Label, p.BlockedValues)}, nil
}
