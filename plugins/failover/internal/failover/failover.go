// Package failover implements the failover-filter, Llumnix's failover filter: it blocks the
// endpoints of a failure domain (a zone, by default) in which some endpoint of the fleet is
// failing, because a domain that has lost one member is the likeliest to lose the next.
package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// Type is the plugin type declared in the host configuration.
const Type = "failover-filter"

// Filter is the failover-filter. Its Configure (from sdk.Params) merges params over Defaults,
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

// Type returns "failover-filter".
func (f *Filter) Type() string { return Type }

// Description returns one line saying what the filter does.
func (f *Filter) Description() string {
	return "blocks the endpoints in a failure domain (domainLabel, the zone by default) where an endpoint of the fleet is failing, as Llumnix's failover filter"
}

// Reads declares the candidates' labels and the fleet's endpoints out of the rotation.
func (f *Filter) Reads() []string { return []string{"endpoints.labels", "endpoints.excluded"} }

// Filter keeps the candidates whose failure domain (the value of domainLabel) has no member among
// the cycle's excluded endpoints for one of failureReasons. A candidate without the label, or
// with an empty value, belongs to no known domain and is never blocked. When every candidate is in
// a failing domain, all are kept and the reason says so: they passed the router's health checks,
// and refusing every request because each zone lost a member would be the worse answer (Llumnix
// blocks them; see the README).
func (f *Filter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	if c == nil {
		return sdk.FilterVerdict{}, errors.New("filtering: nil cycle")
	}
	p := f.Get()
	failing := failingDomains(c.Excluded, p)
	n := len(c.Endpoints)
	if len(failing) == 0 {
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: "no failing domain"}, nil
	}
	kept := make([]int, 0, n)
	for i, e := range c.Endpoints {
		if d := e.Labels[p.DomainLabel]; d == "" || !slices.Contains(failing, d) {
			kept = append(kept, i)
		}
	}
	where := fmt.Sprintf("%s %s", p.DomainLabel, strings.Join(failing, ", "))
	switch {
	case len(kept) == n:
		return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("all %d outside the failing domains (%s)", n, where)}, nil
	case len(kept) == 0:
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: fmt.Sprintf("all %d in failing domains (%s): all kept, no healthy domain", n, where)}, nil
	}
	return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("%d of %d outside the failing domains (%s)", len(kept), n, where)}, nil
}

// failingDomains returns the domains, sorted and each once, of the excluded endpoints left out
// for one of p's failure reasons; an excluded endpoint without a domain names none.
func failingDomains(excluded []sdk.ExcludedEndpoint, p *Params) []string {
	var out []string
	for _, x := range excluded {
		if d := x.Labels[p.DomainLabel]; d != "" && slices.Contains(p.FailureReasons, x.Reason) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
