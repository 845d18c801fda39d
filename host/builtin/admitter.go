package builtin

import (
	"context"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// AlwaysAdmitType is the type of AlwaysAdmit, also the admitter fallback.
const AlwaysAdmitType = "always-admit"

var _ sdk.Admitter = (*AlwaysAdmit)(nil)

// AlwaysAdmit admits every request with the reason "always-admit". No parameters.
type AlwaysAdmit struct{}

// NewAlwaysAdmit returns an admitter that admits everything.
func NewAlwaysAdmit() *AlwaysAdmit { return &AlwaysAdmit{} }

// Type returns "always-admit".
func (a *AlwaysAdmit) Type() string { return AlwaysAdmitType }

// Description returns one line saying what the admitter does.
func (a *AlwaysAdmit) Description() string { return "admits every request" }

// Configure accepts only empty parameters.
func (a *AlwaysAdmit) Configure(params []byte) error { return configureNone(params) }

// Admit admits c's request, even when c is nil: admission fails open.
func (a *AlwaysAdmit) Admit(context.Context, *sdk.Cycle) (sdk.AdmitVerdict, error) {
	return sdk.AdmitVerdict{Admitted: true, Reason: AlwaysAdmitType}, nil
}
