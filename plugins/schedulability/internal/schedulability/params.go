package schedulability

import (
	"fmt"
	"strings"
)

// Params are the filter's parameters, decoded from JSON over Defaults.
type Params struct {
	// Label is the endpoint label that marks an endpoint unschedulable; non-empty, no spaces.
	Label string `json:"label"`
	// BlockedValues are the values of Label that block an endpoint, compared exactly (label
	// values are case-sensitive, as in Kubernetes); at least one.
	BlockedValues []string `json:"blockedValues"`
}

// Defaults block the endpoints labelled foresight.io/schedulable=false: the project's own label
// (Kubernetes has no standard label for a pod that must take no new work: cordoning marks nodes,
// not pods), under the project's domain as Kubernetes' labelling conventions ask of tools.
func Defaults() Params {
	return Params{Label: "foresight.io/schedulable", BlockedValues: []string{"false"}}
}

// Validate returns an error naming the first parameter that is not accepted.
func (p *Params) Validate() error {
	if p.Label == "" || strings.ContainsFunc(p.Label, isSpace) {
		return fmt.Errorf("parameter %q must be a label name without spaces, got %q", "label", p.Label)
	}
	if len(p.BlockedValues) == 0 {
		return fmt.Errorf("parameter %q must list at least one value (with none the filter blocks nothing: leave it out of the pipeline instead)", "blockedValues")
	}
	return nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
