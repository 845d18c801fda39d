package pipeline

import (
	"slices"
	"sync"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// trial is the one slot that holds arms or a shadow. Each cycle is assigned an arm when it
// enters the pipeline (experiment.Assign over its session, else its request id); at the
// experiment's slot the cohort splits by arm, each group calling its arm's plugin. The shadow
// sees the same input after the cycle is decided, off the request's path, and its decision is
// compared with the one enacted (shadow.go).
type trial struct {
	slot  string    // e.g. "scorers.0"
	stage sdk.Stage // the slot's stage
	index int       // the slot's position among the filters or scorers; 0 for the others

	names      []string  // arm names; one ("") when the slot has only a shadow
	weights    []float64 // arm shares
	arms       []any     // typed slots per arm: *producerSlot, *filterSlot, …
	shadow     any       // the shadow's typed slot; nil without one
	shadowName string

	outcomes *experiment.Recorder
}

// newExperiment builds the experiment of ref, whose first plugin is already built as primary;
// build builds the typed slot of any other plugin of the slot's stage.
func newExperiment(slot string, stage sdk.Stage, index int, ref *config.StageRef, primary any, build func(name string) any) *trial {
	e := &trial{slot: slot, stage: stage, index: index}
	if len(ref.Arms) == 0 {
		e.names, e.weights, e.arms = []string{""}, []float64{1}, []any{primary}
	}
	for i, a := range ref.Arms {
		e.names = append(e.names, a.ArmName())
		e.weights = append(e.weights, a.ArmWeight())
		if i == 0 {
			e.arms = append(e.arms, primary)
		} else {
			e.arms = append(e.arms, build(a.PluginRef))
		}
	}
	if ref.Shadow != nil {
		e.shadowName = ref.Shadow.ArmName()
		e.shadow = build(ref.Shadow.PluginRef)
	}
	arms := e.names
	if len(ref.Arms) == 0 {
		arms = nil // a shadow alone: no arms to compare, the slot's plugin serves every request
	}
	e.outcomes = experiment.NewRecorder(slot, arms, e.shadowName, 0)
	return e
}

// at reports whether the experiment sits at stage's index-th slot (nil-safe).
func (e *trial) at(stage sdk.Stage, index int) bool {
	return e != nil && e.stage == stage && e.index == index
}

// hasArms reports whether requests are split between arms.
func (e *trial) hasArms() bool { return e != nil && len(e.arms) > 1 }

// assign returns the arm of a cycle's request.
func (e *trial) assign(r sdk.Request) int {
	if !e.hasArms() {
		return 0
	}
	return experiment.AssignRequest(&r, e.weights)
}

// same reports whether e and o run the same experiment (slot, arms and shadow), so that the
// outcomes gathered so far still describe it.
func (e *trial) same(o *trial) bool {
	return e != nil && o != nil && e.slot == o.slot && e.shadowName == o.shadowName && slices.Equal(e.names, o.names)
}

// armSlot returns the typed slot serving arm at stage's index-th slot: the arm's plugin at the
// experiment's slot, primary anywhere else.
func armSlot[S any](p *Pipeline, stage sdk.Stage, index, arm int, primary S) S {
	if p.exp.at(stage, index) {
		return p.exp.arms[arm].(S)
	}
	return primary
}

// byArm calls f once per arm with the members assigned to it, arms with none skipped; outside
// the experiment's slot, once with every member as arm 0. Groups run concurrently.
func (p *Pipeline) byArm(stage sdk.Stage, index int, ms []*member, f func(arm int, group []*member)) {
	if !p.exp.at(stage, index) || !p.exp.hasArms() {
		f(0, ms)
		return
	}
	groups := make([][]*member, len(p.exp.arms))
	for _, m := range ms {
		groups[m.arm] = append(groups[m.arm], m)
	}
	var wg sync.WaitGroup
	for arm, g := range groups {
		if len(g) == 0 {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); f(arm, g) }()
	}
	wg.Wait()
}

// Experiment describes the pipeline's experiment; ok is false without one.
func (p *Pipeline) Experiment() (slot string, arms []string, ok bool) {
	if p.exp == nil {
		return "", nil, false
	}
	if p.exp.hasArms() {
		arms = p.exp.names
	}
	return p.exp.slot, arms, true
}

// ExperimentReport returns the experiment's outcomes and comparisons; ok is false without one.
func (p *Pipeline) ExperimentReport() (experiment.Report, bool) {
	if p.exp == nil {
		return experiment.Report{}, false
	}
	return p.exp.outcomes.Report(), true
}

// Record adds the outcome of the request t decided to the experiment's arm (nothing for a
// request that was not part of one).
func (p *Pipeline) Record(t *Trace, o experiment.Outcome) {
	if p.exp == nil || t == nil || t.Experiment != p.exp.slot || !p.exp.hasArms() {
		return
	}
	p.exp.outcomes.Record(t.Arm, o)
}

// InheritExperiment carries the outcomes gathered by prev's experiment over to p's when both run
// the same one (a reload that changed another slot must not reset it). Call it before p serves.
func (p *Pipeline) InheritExperiment(prev *Pipeline) {
	if prev != nil && p.exp.same(prev.exp) {
		p.exp.outcomes = prev.exp.outcomes
	}
}
