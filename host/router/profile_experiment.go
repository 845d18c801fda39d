package router

import (
	"slices"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// profileTrial runs the handler's A/B experiment of whole profiles (config.ProfileExperiment):
// a request the handler sent to the experiment (config.ExperimentProfile) is given an arm by
// experiment.Assign over its session, else its request id — the hash a slot's arms use — and
// is decided by that arm's profile; its outcome goes to the arm in a Recorder whose report is
// the one /admin/experiments serves for a slot, under the slot config.ProfileExperimentSlot.
type profileTrial struct {
	names    []string // arm names, config order; the first is the baseline
	profiles []string // each arm's profile
	weights  []float64
	outcomes *experiment.Recorder
}

// newProfileTrial returns the experiment of cfg's handler; nil without one.
func newProfileTrial(cfg *config.Config) *profileTrial {
	e := cfg.ProfileExperiment()
	if e == nil {
		return nil
	}
	t := &profileTrial{}
	for _, a := range e.Arms {
		t.names = append(t.names, a.ArmName())
		t.profiles = append(t.profiles, a.Profile)
		t.weights = append(t.weights, a.ArmWeight())
	}
	t.outcomes = experiment.NewRecorder(config.ProfileExperimentSlot, t.names, "", 0)
	return t
}

// assign returns the arm of r.
func (t *profileTrial) assign(r sdk.Request) int {
	return experiment.AssignRequest(&r, t.weights)
}

// same reports whether t and o compare the same arms on the same profiles with the same
// shares, so that the outcomes gathered so far still describe t.
func (t *profileTrial) same(o *profileTrial) bool {
	return t != nil && o != nil && slices.Equal(t.names, o.names) && slices.Equal(t.profiles, o.profiles) &&
		slices.Equal(t.weights, o.weights)
}
