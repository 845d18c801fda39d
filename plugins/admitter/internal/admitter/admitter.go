// Package admitter implements the latency-slo-admitter: it sheds a sheddable request (priority
// below zero) that the fleet is predicted to serve outside its latency objective.
package admitter

import (
	"context"
	"errors"
	"maps"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Type is the plugin type, as declared in a pipeline config.
const Type = "latency-slo-admitter"

// Admitter is the latency SLO admitter. Its Configure (from sdk.Params) replaces the parameters
// with params merged over DefaultParams; on error the previous parameters stay in force. It is
// safe to call while Admit runs. The zero value is not usable; call New.
type Admitter struct {
	params
	// floor is the per-prefix-group state of prefixGroupFloor: the one state an instance keeps.
	floor groupFloor
}

// params is the embedded parameter holder, named by an alias so that its field does not clash
// with the Params method.
type params = sdk.Params[Params]

var _ sdk.Admitter = (*Admitter)(nil)

// New returns an admitter configured with DefaultParams.
func New() *Admitter {
	a := &Admitter{}
	a.Init(DefaultParams)
	return a
}

// Type returns "latency-slo-admitter".
func (a *Admitter) Type() string { return Type }

// Description says in one line what the admitter does.
func (a *Admitter) Description() string {
	return "sheds sheddable requests that no endpoint is predicted to serve within their SLO or TTFT budget, or past a queue bound"
}

// Params returns a copy of the parameters in force.
func (a *Admitter) Params() Params {
	p := *a.Get()
	p.BudgetsMs = maps.Clone(p.BudgetsMs)
	p.QueueBounds = maps.Clone(p.QueueBounds)
	p.parsed = nil // derived from the two maps, not a parameter
	return p
}

// Admit returns the verdict for c's request with the reason; see the package README for the
// algorithm. Without prefixGroupFloor it reads nothing but c and the parameters, so the same
// cycle gives the same verdict; with it, the verdict also depends on the cycles the instance saw
// before (their prefix groups, verdicts and now), so the same sequence gives the same verdicts.
func (a *Admitter) Admit(_ context.Context, c *sdk.Cycle) (sdk.AdmitVerdict, error) {
	if c == nil {
		return sdk.AdmitVerdict{}, errors.New("admitting: nil cycle")
	}
	p := a.Get()
	return a.floor.apply(c, admit(c, p), p), nil
}

// AdmitsUnsheddable reports that the admitter admits every request of priority 0 or above
// without reading anything else, which holds unless the prefix group floor is on: the floor
// counts those requests in their group's window (sdk.UnsheddableAdmitter). The host then admits
// them without a call.
func (a *Admitter) AdmitsUnsheddable() bool { return a.Get().PrefixGroupFloor <= 0 }

// Reads declares the cycle fields the admitter reads (sdk.Reader), so the host sends only those.
func (a *Admitter) Reads() []string {
	return []string{"request", "request.prefix_block_hashes", "endpoints.ids", "endpoints.states.kv_cache_usage",
		"endpoints.states.inflight_requests", "endpoints.states.min_running_tpot_slo_ms", "endpoints.states.waiting",
		"endpoints.states.dispatched_since_scrape", "endpoints.predictions"}
}
