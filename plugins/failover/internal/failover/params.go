package failover

import (
	"fmt"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Params are the filter's parameters, decoded from JSON over Defaults.
type Params struct {
	// DomainLabel is the endpoint label whose value names an endpoint's failure domain; non-empty,
	// no spaces.
	DomainLabel string `json:"domainLabel"`
	// FailureReasons are the reasons for leaving an endpoint out of a cycle (sdk.ExcludedEndpoint)
	// that count as a failure of its domain; at least one.
	FailureReasons []string `json:"failureReasons"`
}

// Defaults take the zone as the failure domain, by Kubernetes' well-known label
// topology.kubernetes.io/zone (which cloud providers set on nodes and operators copy onto pods or
// endpoints): a zone is the unit that fails together (power, network, a control plane), the
// granularity Llumnix's failover filter works at. Both reasons the host gives count as failures:
// an endpoint that stopped answering and one whose requests kept failing.
func Defaults() Params {
	return Params{DomainLabel: "topology.kubernetes.io/zone", FailureReasons: []string{sdk.ExcludedUnhealthy, sdk.ExcludedEjected}}
}

// Validate returns an error naming the first parameter that is not accepted.
func (p *Params) Validate() error {
	if p.DomainLabel == "" || strings.ContainsAny(p.DomainLabel, " \t\r\n") {
		return fmt.Errorf("parameter %q must be a label name without spaces, got %q", "domainLabel", p.DomainLabel)
	}
	if len(p.FailureReasons) == 0 {
		return fmt.Errorf("parameter %q must list at least one reason (%q or %q; with none the filter blocks nothing: leave it out of the pipeline instead)",
			"failureReasons", sdk.ExcludedUnhealthy, sdk.ExcludedEjected)
	}
	for _, r := range p.FailureReasons {
		if err := sdk.CheckOneOf("failureReasons", r, sdk.ExcludedUnhealthy, sdk.ExcludedEjected); err != nil {
			return err
		}
	}
	return nil
}
