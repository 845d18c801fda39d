package config

import (
	"cmp"
	"slices"
	"strings"
)

// An A/B experiment of whole pipelines: profileHandler.experiment splits the requests the
// handler's explicit rules (the profile header, the prediction header) leave unchosen between
// profiles, by the same session hash as a stage slot's arms (experiment.Assign over the session,
// else the request id), so a conversation stays on one pipeline. Its outcomes are reported like a
// slot's arms, under the slot name ProfileExperimentSlot, with the same intervals. A config holds
// one experiment: this one, or a slot's arms or shadow.

// ProfileExperiment is the handler's split of requests between profiles.
type ProfileExperiment struct {
	// Arms are the profiles compared, at least two, each profile once; the first is the baseline
	// the others are compared with.
	Arms []ProfileArm `yaml:"arms"`
}

// ProfileArm is one profile of a ProfileExperiment.
type ProfileArm struct {
	// Name labels the arm in reports (default: Profile).
	Name string `yaml:"name"`
	// Profile is the name of a profile under profiles:.
	Profile string `yaml:"profile"`
	// Weight is the arm's share of the requests, relative to the other arms' (default 1).
	Weight *float64 `yaml:"weight"`
}

// ArmName returns the arm's name, its profile's when unnamed.
func (a ProfileArm) ArmName() string { return cmp.Or(a.Name, a.Profile) }

// ArmWeight returns the arm's share (1 when unset).
func (a ProfileArm) ArmWeight() float64 {
	if a.Weight == nil {
		return 1
	}
	return *a.Weight
}

// ProfileExperimentSlot is the slot name under which the outcomes of a ProfileExperiment are
// reported (experiment.Report.Slot) and traced (pipeline.Trace.Experiment).
const ProfileExperimentSlot = "profiles"

// ExperimentProfile is what ChooseProfile returns, by RuleExperiment, for a request the
// ProfileExperiment decides: the arm is drawn once the request's session is known
// (router.Pipelines.RunProfile). It is no profile's name (those have no '@').
const ExperimentProfile = "@experiment"

// RuleExperiment is the rule of a request sent to the ProfileExperiment.
const RuleExperiment = "experiment"

// ProfileExperiment returns the handler's experiment; nil without one.
func (c *Config) ProfileExperiment() *ProfileExperiment {
	if c.ProfileHandler == nil {
		return nil
	}
	return c.ProfileHandler.Experiment
}

// validateProfileExperiment checks the arms: two or more, each a declared profile once, named
// uniquely, weights in [0, 1e6] and not all 0; and that no slot holds an experiment too.
// experiment is the slot validatePipeline found holding one, nil when none does.
func (c *Config) validateProfileExperiment(experiment []any) error {
	e := c.ProfileExperiment()
	if e == nil {
		return nil
	}
	path := []any{"profileHandler", "experiment"}
	if experiment != nil {
		return c.errorAt(path, "a config runs one experiment, and %s holds one: drop its arms or shadow, or this experiment", fieldPath(experiment))
	}
	if len(e.Arms) < 2 {
		return c.errorAt(append(path, "arms"), "an experiment needs at least two arms, got %d", len(e.Arms))
	}
	known := strings.Join(c.ProfileNames(), ", ")
	names, profiles := map[string]int{}, map[string]int{}
	total := 0.0
	for i, a := range e.Arms {
		at := append(slices.Clone(path), "arms", i)
		switch {
		case a.Profile == "":
			return c.errorAt(append(at, "profile"), "missing; every arm names a profile (profiles: %s)", known)
		case !slices.Contains(c.ProfileNames(), a.Profile):
			return c.errorAt(append(at, "profile"), "no profile named %q (profiles: %s)", a.Profile, known)
		case !nameRE.MatchString(a.ArmName()):
			return c.errorAt(append(at, "name"), "%q must be lower-case letters, digits and dashes", a.ArmName())
		}
		if j, dup := profiles[a.Profile]; dup {
			return c.errorAt(append(at, "profile"), "profile %q is already arms[%d]: an arm per profile", a.Profile, j)
		}
		profiles[a.Profile] = i
		if j, dup := names[a.ArmName()]; dup {
			return c.errorAt(append(at, "name"), "arm %q is named twice (first as arms[%d])", a.ArmName(), j)
		}
		names[a.ArmName()] = i
		if w := a.ArmWeight(); !(w >= 0 && w <= 1e6) {
			return c.errorAt(append(at, "weight"), "must be in [0, 1e6], got %v", w)
		}
		total += a.ArmWeight()
	}
	if total <= 0 {
		return c.errorAt(append(path, "arms"), "every arm has weight 0: no request would be served")
	}
	return nil
}

func cloneProfileExperiment(e *ProfileExperiment) *ProfileExperiment {
	if e == nil {
		return nil
	}
	return &ProfileExperiment{Arms: slices.Clone(e.Arms)}
}
