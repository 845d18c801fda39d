package config_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
)

// abProfiles is twoProfiles's two pipelines under an A/B experiment of the handler: load, the
// baseline, against slo, three requests in four.
var abProfiles = y(
	"plugins:",
	"  - {name: queue, type: queue-scorer}",
	"  - {name: kv, type: kv-cache-utilization-scorer}",
	"  - {name: pick, type: max-score-picker}",
	"profiles:",
	"  - name: load",
	"    pipeline:",
	"      scorers: [{pluginRef: queue}]",
	"      picker: {pluginRef: pick}",
	"  - name: slo",
	"    pipeline:",
	"      scorers: [{pluginRef: kv}]",
	"      picker: {pluginRef: pick}",
	"profileHandler:",
	"  sloProfile: slo",
	"  experiment:",
	"    arms:",
	"      - {profile: load, weight: 1}",
	"      - {name: predicted, profile: slo, weight: 3}",
)

func TestParseProfileExperiment(t *testing.T) {
	c, err := config.Parse("test.yaml", []byte(abProfiles))
	if err != nil {
		t.Fatal(err)
	}
	e := c.ProfileExperiment()
	if e == nil || len(e.Arms) != 2 {
		t.Fatalf("experiment %+v, want two arms", e)
	}
	// An unnamed arm is named after its profile.
	var names []string
	for _, a := range e.Arms {
		names = append(names, a.ArmName())
	}
	if !slices.Equal(names, []string{"load", "predicted"}) || e.Arms[1].ArmWeight() != 3 {
		t.Errorf("arms %v, weights %v and %v", names, e.Arms[0].ArmWeight(), e.Arms[1].ArmWeight())
	}
	// A copy's arms are its own: editing them leaves the original's alone.
	n := c.Clone()
	n.ProfileHandler.Experiment.Arms[0].Profile = "slo"
	if c.ProfileExperiment().Arms[0].Profile != "load" {
		t.Error("Clone shares the experiment's arms")
	}
	// A profile's own config (what a pipeline is built from) has no handler, so no experiment.
	if c.ForProfile("slo").ProfileExperiment() != nil {
		t.Error("ForProfile kept the experiment")
	}
}

// TestChooseProfileExperiment: the explicit headers still choose; everything else, SLO and
// objective included, goes to the experiment.
func TestChooseProfileExperiment(t *testing.T) {
	c, err := config.Parse("test.yaml", []byte(abProfiles))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		headers map[string]string
		slo     bool
		want    string
		rule    string
	}{
		{"nothing", nil, false, config.ExperimentProfile, config.RuleExperiment},
		{"an SLO", nil, true, config.ExperimentProfile, config.RuleExperiment},
		{"the profile header", map[string]string{"x-foresight-profile": "slo"}, false, "slo", config.RuleHeader},
		{"the prediction header", map[string]string{"x-prediction-based-routing": "false"}, true, "load", config.RulePrediction},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			p, rule, err := c.ChooseProfile(h, "", tt.slo)
			if err != nil || p != tt.want || rule != tt.rule {
				t.Errorf("ChooseProfile = %q by %q, %v; want %q by %q", p, rule, err, tt.want, tt.rule)
			}
		})
	}
}

func TestParseProfileExperimentErrors(t *testing.T) {
	// base is abProfiles up to its arms (lines 1-17), so the errors' lines are easy to count.
	base := strings.Split(strings.TrimSuffix(abProfiles, "\n"), "\n")[:17]
	with := func(lines ...string) string { return y(append(slices.Clone(base), lines...)...) }
	tests := []struct {
		name, yaml, want string
	}{
		{"one arm", with("      - {profile: load}"),
			"test.yaml:17: profileHandler.experiment.arms: an experiment needs at least two arms, got 1"},
		{"an arm without a profile", with("      - {profile: load}", "      - {name: x}"),
			"test.yaml:19: profileHandler.experiment.arms[1].profile: missing; every arm names a profile (profiles: load, slo)"},
		{"an unknown profile", with("      - {profile: load}", "      - {profile: fast}"),
			`test.yaml:19: profileHandler.experiment.arms[1].profile: no profile named "fast" (profiles: load, slo)`},
		{"a profile twice", with("      - {profile: load}", "      - {name: again, profile: load}"),
			`test.yaml:19: profileHandler.experiment.arms[1].profile: profile "load" is already arms[0]: an arm per profile`},
		{"a name twice", with("      - {name: a, profile: load}", "      - {name: a, profile: slo}"),
			`test.yaml:19: profileHandler.experiment.arms[1].name: arm "a" is named twice (first as arms[0])`},
		{"a bad name", with("      - {name: A, profile: load}", "      - {profile: slo}"),
			`test.yaml:18: profileHandler.experiment.arms[0].name: "A" must be lower-case letters, digits and dashes`},
		{"a negative weight", with("      - {profile: load, weight: -1}", "      - {profile: slo}"),
			"test.yaml:18: profileHandler.experiment.arms[0].weight: must be in [0, 1e6], got -1"},
		{"every weight 0", with("      - {profile: load, weight: 0}", "      - {profile: slo, weight: 0}"),
			"test.yaml:17: profileHandler.experiment.arms: every arm has weight 0: no request would be served"},
		{"an unknown arm field", with("      - {profile: load, pluginRef: queue}", "      - {profile: slo}"),
			`test.yaml:18: unknown field "pluginRef" in a profile arm (known: name, profile, weight)`},
		{"a slot's experiment too", strings.Replace(abProfiles, "scorers: [{pluginRef: kv}]", "scorers: [{arms: [{pluginRef: kv}, {pluginRef: queue}]}]", 1),
			"test.yaml:16: profileHandler.experiment: a config runs one experiment, and profiles[1].pipeline.scorers[0] holds one: drop its arms or shadow, or this experiment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("test.yaml", []byte(tt.yaml))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse error:\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
}
