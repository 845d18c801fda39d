// Package admitter implements the latency-slo-admitter: it sheds a sheddable request (priority
// below zero) that the fleet is predicted to serve outside its latency objective.
package admitter

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Type is the plugin type, as declared in a pipeline config.
const Type = "latency-slo-admitter"

// Admitter is the latency SLO admitter. The zero value is not usable; call New.
type Admitter struct {
	cfg atomic.Pointer[config]
}

// config is a validated Params with its budgets parsed once.
type config struct {
	Params
	classes []class
}

// newConfig parses p's budgets; p must have passed Validate, which checks them.
func newConfig(p Params) *config {
	classes, _ := p.BudgetsMs.classes()
	return &config{Params: p, classes: classes}
}

var _ sdk.Admitter = (*Admitter)(nil)

// New returns an admitter configured with DefaultParams.
func New() *Admitter {
	a := &Admitter{}
	a.cfg.Store(newConfig(DefaultParams()))
	return a
}

// Type returns "latency-slo-admitter".
func (a *Admitter) Type() string { return Type }

// Description says in one line what the admitter does.
func (a *Admitter) Description() string {
	return "sheds sheddable requests that no endpoint is predicted to serve within their SLO or TTFT budget"
}

// Configure replaces the parameters with params merged over DefaultParams; on error the
// previous parameters stay in force. It is safe to call while Admit runs.
func (a *Admitter) Configure(params []byte) error {
	p, err := sdk.DecodeParams(params, DefaultParams())
	if err != nil {
		return err
	}
	a.cfg.Store(newConfig(p))
	return nil
}

// Params returns a copy of the parameters in force.
func (a *Admitter) Params() Params {
	p := a.cfg.Load().Params
	p.BudgetsMs = maps.Clone(p.BudgetsMs)
	return p
}

// Admit returns the verdict for c's request with the reason; see the package README for the
// algorithm. It reads nothing but c and the parameters, so the same cycle gives the same verdict.
func (a *Admitter) Admit(_ context.Context, c *sdk.Cycle) (sdk.AdmitVerdict, error) {
	if c == nil {
		return sdk.AdmitVerdict{}, errors.New("admitting: nil cycle")
	}
	return admit(c, a.cfg.Load()), nil
}
