package router

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/experiment"
)

// abYAML is profilesYAML's two profiles as the arms of the handler's experiment, half the
// sessions each.
var abYAML = strings.Replace(profilesYAML, "profileHandler: {sloProfile: slo}", `profileHandler:
  sloProfile: slo
  experiment:
    arms:
      - {profile: load}
      - {name: predicted, profile: slo}
`, 1)

// decideSession decides a request of session as the proxy does: the handler's choice, then the
// cycle on the chosen profile.
func decideSession(t *testing.T, l *Pipelines, session string) (profile, arm string) {
	t.Helper()
	choice, rule, err := l.Choose(http.Header{}, "", true)
	if err != nil || choice != config.ExperimentProfile || rule != config.RuleExperiment {
		t.Fatalf("Choose = %q by %q, %v; want the experiment", choice, rule, err)
	}
	c := splitCycle("r-" + session)
	c.Request.SessionID = session
	tr := l.RunProfile(context.Background(), choice, c)
	if tr.Experiment != config.ProfileExperimentSlot {
		t.Fatalf("trace experiment %q, want %q", tr.Experiment, config.ProfileExperimentSlot)
	}
	// Each arm decides as its profile does: load picks b, slo picks a (splitCycle).
	if want := map[string]string{"load": "b", "slo": "a"}[tr.Profile]; picked(tr) != want {
		t.Errorf("profile %q picked %q, want %q", tr.Profile, picked(tr), want)
	}
	return tr.Profile, tr.Arm
}

func TestProfileExperimentSplitsBySession(t *testing.T) {
	l := start(t, abYAML)
	armOf := map[string]string{"load": "load", "slo": "predicted"}
	count := map[string]int{}
	for i := range 200 {
		session := fmt.Sprintf("session-%d", i)
		profile, arm := decideSession(t, l, session)
		if armOf[profile] != arm {
			t.Fatalf("session %s: arm %q decided by profile %q", session, arm, profile)
		}
		// The same session stays on its arm.
		if again, _ := decideSession(t, l, session); again != profile {
			t.Fatalf("session %s went to %q, then to %q", session, profile, again)
		}
		count[arm]++
	}
	// Equal weights: each arm gets about half of 200 sessions (binomial sd ≈ 7; 60 is > 5 sd off).
	if count["load"] < 60 || count["predicted"] < 60 {
		t.Errorf("sessions by arm %v, want about 100 each", count)
	}
	// GET /admin/pipeline lists the arms, their profiles and shares.
	want := []admin.Arm{{Name: "load", Plugin: "load", Share: 0.5}, {Name: "predicted", Plugin: "slo", Share: 0.5}}
	if h := l.Describe().Handler; h == nil || !reflect.DeepEqual(h.Experiment, want) {
		t.Errorf("described handler %+v, want the experiment's arms %+v", h, want)
	}
}

func TestProfileExperimentReportAndReload(t *testing.T) {
	l := start(t, abYAML)
	for i := range 40 {
		c := splitCycle(fmt.Sprintf("r%d", i))
		c.Request.SessionID = fmt.Sprintf("s%d", i)
		tr := l.RunProfile(context.Background(), config.ExperimentProfile, c)
		// The slo arm meets its 100 ms TTFT objective, the load arm misses it.
		ttft := map[string]float64{"load": 150, "predicted": 50}[tr.Arm]
		l.Record(tr, experiment.Outcome{TTFTMs: ttft, SLOTTFTMs: 100})
	}
	rep, ok := l.ExperimentReport()
	if !ok || rep.Slot != config.ProfileExperimentSlot || len(rep.Arms) != 2 || rep.Arms[0].Name != "load" || rep.Arms[1].Name != "predicted" {
		t.Fatalf("report %+v, %v", rep, ok)
	}
	load, pred := rep.Arms[0], rep.Arms[1]
	if load.Requests+pred.Requests != 40 || load.SLOAttainment != 0 || pred.SLOAttainment != 1 || pred.VsBaseline == nil ||
		pred.VsBaseline.Baseline != "load" || rep.Unknown != 0 {
		t.Errorf("arms %+v and %+v", load, pred)
	}
	// A reload that keeps the experiment keeps its outcomes; one that changes the shares starts
	// afresh, since the old outcomes describe another split.
	if _, err := l.Reload(context.Background(), parse(t, abYAML)); err != nil {
		t.Fatal(err)
	}
	if rep, _ := l.ExperimentReport(); rep.Arms[0].Requests+rep.Arms[1].Requests != 40 {
		t.Errorf("after an unchanged reload: %+v", rep.Arms)
	}
	reweighted := strings.Replace(abYAML, "{profile: load}", "{profile: load, weight: 3}", 1)
	if _, err := l.Reload(context.Background(), parse(t, reweighted)); err != nil {
		t.Fatal(err)
	}
	if rep, _ := l.ExperimentReport(); rep.Arms[0].Requests+rep.Arms[1].Requests != 0 {
		t.Errorf("after a reload with other shares: %+v", rep.Arms)
	}
	// Without the experiment, a request chosen for it before the reload goes to the default
	// profile, outside any experiment.
	if _, err := l.Reload(context.Background(), parse(t, profilesYAML)); err != nil {
		t.Fatal(err)
	}
	tr := l.RunProfile(context.Background(), config.ExperimentProfile, splitCycle("late"))
	if tr.Profile != "load" || tr.Experiment != "" {
		t.Errorf("after the experiment's removal: profile %q, experiment %q", tr.Profile, tr.Experiment)
	}
	if _, ok := l.ExperimentReport(); ok {
		t.Error("a report without an experiment")
	}
}
