package config_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/openai"
)

// twoProfiles is a load profile (queue scorer, max-score picker) and an SLO profile that shares
// its picker; the handler sends SLO requests and the batch objective to the SLO profile.
var twoProfiles = y(
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
	"      scorers: [{pluginRef: kv, weight: 2}]",
	"      picker: {pluginRef: pick}",
	"      stageTimeout: 40ms",
	"profileHandler:",
	"  sloProfile: slo",
	"  objectives: {batch: slo}",
	"objectives:",
	"  - {name: batch, priority: -1}",
	"  - {name: chat, priority: 1}",
)

func TestParseProfiles(t *testing.T) {
	c, err := config.Parse("test.yaml", []byte(twoProfiles))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ProfileNames(); !slices.Equal(got, []string{"load", "slo"}) {
		t.Errorf("profiles %v", got)
	}
	h := c.ProfileHandler
	// Unset fields take their defaults: the first profile, and the two headers' names.
	if h.Default != "load" || h.Header != config.DefaultProfileHeader || h.PredictionHeader != config.DefaultPredictionHeader {
		t.Errorf("handler %+v", *h)
	}
	slo := c.ForProfile("slo")
	if slo == nil || slo.Profile() != "slo" || slo.Pipeline.StageTimeout.Milliseconds() != 40 || slo.Pipeline.Scorers[0].PluginRef != "kv" {
		t.Fatalf("ForProfile(slo) = %+v", slo)
	}
	var names []string
	for _, p := range slo.Plugins {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"kv", "pick"}) || slo.Profiles != nil {
		t.Errorf("the slo profile's config has plugins %v and profiles %v, want kv, pick and none", names, slo.Profiles)
	}
	if load := c.ForProfile("load"); load.Pipeline.StageTimeout != config.DefaultStageTimeout {
		t.Errorf("load profile's stage timeout %v, want the default", load.Pipeline.StageTimeout)
	}
	if c.ForProfile("nope") != nil {
		t.Error("ForProfile of a missing profile is not nil")
	}
	if got := c.ProfileSlotNames("slo"); !slices.Equal(got, []string{"scorers.0", "picker"}) {
		t.Errorf("slo slots %v", got)
	}
}

func TestParseSinglePipelineIsTheDefaultProfile(t *testing.T) {
	c, err := config.Parse("test.yaml", []byte(y("plugins:", "  - {name: q, type: queue-scorer}", "pipeline:", "  scorers: [{pluginRef: q}]")))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ProfileNames(), []string{"default"}) || c.DefaultProfileName() != "default" || c.ProfileHandler != nil {
		t.Errorf("profiles %v, default %q, handler %v", c.ProfileNames(), c.DefaultProfileName(), c.ProfileHandler)
	}
	// No handler: the headers are not read, so a request naming a profile is served as before.
	h := http.Header{}
	h.Set(config.DefaultProfileHeader, "nope")
	h.Set(config.DefaultPredictionHeader, "maybe")
	if p, rule, err := c.ChooseProfile(h, "", true); p != "default" || rule != config.RuleDefault || err != nil {
		t.Errorf("ChooseProfile = %q, %q, %v", p, rule, err)
	}
}

func TestParseProfileErrors(t *testing.T) {
	// base is twoProfiles up to its handler (lines 1-14), so the errors' lines are easy to count.
	base := strings.Split(strings.TrimSuffix(twoProfiles, "\n"), "\n")[:14]
	objectives := []string{"objectives:", "  - {name: batch, priority: -1}"}
	with := func(lines ...string) string { return y(append(slices.Clone(base), lines...)...) }
	tests := []struct {
		name, yaml, want string
	}{
		{"pipeline and profiles", with("pipeline:", "  scorers: [{pluginRef: queue}]"),
			"test.yaml:15: pipeline: give pipeline: (one profile) or profiles: (several), not both"},
		{"handler without profiles", y("plugins:", "  - {name: q, type: queue-scorer}", "pipeline:", "  scorers: [{pluginRef: q}]",
			"profileHandler: {default: q}"),
			"test.yaml:5: profileHandler: chooses among profiles, and the config has none: give profiles: instead of pipeline:"},
		{"duplicate profile", strings.Replace(twoProfiles, "name: slo", "name: load", 1),
			`test.yaml:10: profiles[1].name: profile "load" is named twice (first as profiles[0])`},
		{"unnamed profile", strings.Replace(twoProfiles, "  - name: slo", "  - name: ''", 1),
			"test.yaml:10: profiles[1].name: missing; every profile needs a name"},
		{"bad profile name", strings.Replace(twoProfiles, "  - name: slo", "  - name: SLO", 1),
			`test.yaml:10: profiles[1].name: "SLO" must be lower-case letters, digits and dashes`},
		{"undeclared plugin in a profile", strings.Replace(twoProfiles, "pluginRef: kv,", "pluginRef: prefix,", 1),
			`test.yaml:12: profiles[1].pipeline.scorers[0].pluginRef: no plugin named "prefix" is declared under plugins`},
		{"a plugin in two stages across profiles", strings.Replace(twoProfiles, "      picker: {pluginRef: pick}\n      stageTimeout", "      picker: {pluginRef: kv}\n      stageTimeout", 1),
			`test.yaml:13: profiles[1].pipeline.picker.pluginRef: plugin "kv" already serves as scorer; a plugin serves one stage`},
		{"bad profile pipeline setting", strings.Replace(twoProfiles, "stageTimeout: 40ms", "maxBatch: 2000", 1),
			"test.yaml:14: profiles[1].pipeline.maxBatch: must be in [1, 1024], got 2000"},
		{"unknown field in a profile", strings.Replace(twoProfiles, "  - name: slo", "  - name: slo\n    weight: 1", 1),
			`test.yaml:11: unknown field "weight" in a profile (known: name, pipeline)`},
		{"handler default missing", with("profileHandler: {default: fast}"),
			`test.yaml:15: profileHandler.default: no profile named "fast" (profiles: load, slo)`},
		{"handler sloProfile missing", with("profileHandler: {sloProfile: fast}"),
			`test.yaml:15: profileHandler.sloProfile: no profile named "fast" (profiles: load, slo)`},
		{"handler objective undeclared", with(append([]string{"profileHandler:", "  objectives: {chat: slo}"}, objectives...)...),
			`test.yaml:16: profileHandler.objectives.chat: no objective named "chat" is declared under objectives`},
		{"handler objective to a missing profile", with(append([]string{"profileHandler:", "  objectives: {batch: fast}"}, objectives...)...),
			`test.yaml:16: profileHandler.objectives.batch: no profile named "fast" (profiles: load, slo)`},
		{"handler header not a header", with("profileHandler: {header: 'x profile'}"),
			`test.yaml:15: profileHandler.header: "x profile" is not a header name: lower-case letters, digits and -`},
		{"handler headers the same", with("profileHandler: {header: x-p, predictionHeader: x-p}"),
			`test.yaml:15: profileHandler.predictionHeader: "x-p" is also profileHandler.header; the two need their own headers`},
		{"unknown handler field", with("profileHandler: {fallback: load}"),
			`test.yaml:15: unknown field "fallback" in profileHandler (known: default, header, predictionHeader, sloProfile, objectives, experiment)`},
		{"two experiments across profiles", y(
			"plugins:",
			"  - {name: a, type: queue-scorer}",
			"  - {name: b, type: kv-cache-utilization-scorer}",
			"profiles:",
			"  - name: one",
			"    pipeline: {scorers: [{arms: [{pluginRef: a}, {pluginRef: b}]}]}",
			"  - name: two",
			"    pipeline: {scorers: [{arms: [{pluginRef: a}, {pluginRef: b}]}]}"),
			"test.yaml:8: profiles[1].pipeline.scorers[0]: only one slot may hold an experiment (arms or a shadow), and profiles[0].pipeline.scorers[0] does"},
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

// TestChooseProfile walks the handler's rules in order: each row is decided by the first rule
// that applies, the ones above it absent.
func TestChooseProfile(t *testing.T) {
	c, err := config.Parse("test.yaml", []byte(twoProfiles))
	if err != nil {
		t.Fatal(err)
	}
	noSLO, err := config.Parse("test.yaml", []byte(strings.Replace(twoProfiles, "  sloProfile: slo\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		cfg       *config.Config
		headers   map[string]string
		objective string
		slo       bool
		want      string
		rule      string
		err       string // the 400's message; the header it names is the first of headers
	}{
		{"nothing: the default", c, nil, "", false, "load", config.RuleDefault, ""},
		{"an SLO", c, nil, "", true, "slo", config.RuleSLO, ""},
		{"an SLO without an SLO profile", noSLO, nil, "", true, "load", config.RuleDefault, ""},
		{"a mapped objective over no SLO", c, nil, "batch", false, "slo", config.RuleObjective, ""},
		{"an unmapped objective: on to the SLO rule", c, nil, "chat", true, "slo", config.RuleSLO, ""},
		{"prediction true", c, map[string]string{"x-prediction-based-routing": "true"}, "", false, "slo", config.RulePrediction, ""},
		{"prediction false over an SLO and an objective", c, map[string]string{"x-prediction-based-routing": "False"}, "batch", true, "load", config.RulePrediction, ""},
		{"prediction not a boolean", c, map[string]string{"x-prediction-based-routing": "yes"}, "", false, "", "",
			`x-prediction-based-routing "yes": must be true or false`},
		{"prediction true without an SLO profile", noSLO, map[string]string{"x-prediction-based-routing": "1"}, "", false, "", "",
			"x-prediction-based-routing: true asks for prediction-based routing, and the router has no SLO profile (profileHandler.sloProfile)"},
		{"the profile header over everything", c, map[string]string{"x-foresight-profile": "load", "x-prediction-based-routing": "true"}, "batch", true,
			"load", config.RuleHeader, ""},
		{"an unknown profile: 400, no fallback", c, map[string]string{"x-foresight-profile": "fast"}, "", true, "", "",
			`x-foresight-profile: no scheduling profile "fast": the router's are load, slo`},
		// A client's header is echoed clipped to openai.MaxEcho bytes, its length said.
		{"a 10,000-byte profile name", c, map[string]string{"x-foresight-profile": strings.Repeat("p", 10000)}, "", false, "", "",
			`x-foresight-profile: no scheduling profile "` + strings.Repeat("p", openai.MaxEcho) + `… (10000 bytes)": the router's are load, slo`},
		{"a 10,000-byte prediction flag", c, map[string]string{"x-prediction-based-routing": strings.Repeat("y", 10000)}, "", false, "", "",
			`x-prediction-based-routing "` + strings.Repeat("y", openai.MaxEcho) + `… (10000 bytes)": must be true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			var first string
			for k, v := range tt.headers {
				h.Set(k, v)
				if first == "" || k == config.DefaultProfileHeader {
					first = k
				}
			}
			p, rule, err := tt.cfg.ChooseProfile(h, tt.objective, tt.slo)
			if tt.err != "" {
				var pe *config.ProfileError
				if !errors.As(err, &pe) || pe.Message != tt.err || pe.Header != first {
					t.Fatalf("error %v (%#v), want %q naming %s", err, pe, tt.err, first)
				}
				return
			}
			if err != nil || p != tt.want || rule != tt.rule {
				t.Errorf("ChooseProfile = %q by %q, %v; want %q by %q", p, rule, err, tt.want, tt.rule)
			}
		})
	}
}

func TestWithStageInAProfile(t *testing.T) {
	c, err := config.Parse("test.yaml", []byte(twoProfiles))
	if err != nil {
		t.Fatal(err)
	}
	// A new name in the slo profile leaves the load profile as it was.
	n, err := c.WithStage("slo", "scorers.0", config.PluginSpec{Name: "prefix", Type: "prefix-cache-scorer"}, nil, "PUT /admin/stages/scorers.0?profile=slo")
	if err != nil {
		t.Fatal(err)
	}
	if got := n.ForProfile("slo").Pipeline.Scorers[0]; got.PluginRef != "prefix" || got.WeightOr1() != 2 {
		t.Errorf("slo scorer %+v", got)
	}
	if got := n.ForProfile("load").Pipeline.Scorers[0].PluginRef; got != "queue" {
		t.Errorf("load scorer %q, want queue", got)
	}
	if n.Plugin("kv") != nil {
		t.Error("kv, no longer used, is still declared")
	}
	// "": the default profile.
	if n, err = c.WithStage("", "scorers.0", config.PluginSpec{Name: "kv2", Type: "kv-cache-utilization-scorer"}, nil, "swap"); err != nil ||
		n.ForProfile("load").Pipeline.Scorers[0].PluginRef != "kv2" {
		t.Errorf("default profile swap: %v", err)
	}
	// The picker serves both profiles: an unnamed spec would change the other one silently.
	_, err = c.WithStage("slo", "picker", config.PluginSpec{Type: "round-robin-picker"}, nil, "swap")
	if err == nil || !strings.Contains(err.Error(), `plugin "pick" also serves profile load: name the new plugin`) {
		t.Errorf("unnamed shared plugin: %v", err)
	}
	// Named as it is: replaced in both.
	if n, err = c.WithStage("slo", "picker", config.PluginSpec{Name: "pick", Type: "round-robin-picker"}, nil, "swap"); err != nil ||
		n.Plugin("pick").Type != "round-robin-picker" {
		t.Errorf("named shared plugin: %v", err)
	}
	if _, err = c.WithStage("fast", "picker", config.PluginSpec{Type: "round-robin-picker"}, nil, "swap"); !errors.Is(err, config.ErrNoProfile) {
		t.Errorf("missing profile: %v", err)
	}
	if _, err = c.WithStage("slo", "producer", config.PluginSpec{Type: "x"}, nil, "swap"); !errors.Is(err, config.ErrNoSlot) ||
		!strings.Contains(err.Error(), `in profile "slo"; its slots are scorers.0, picker`) {
		t.Errorf("missing slot: %v", err)
	}
}
