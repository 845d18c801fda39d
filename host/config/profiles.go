package config

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/plugins/sdk"
	"gopkg.in/yaml.v3"
)

// Scheduling profiles, after GIE's (kubernetes-sigs/gateway-api-inference-extension #1323): the
// config names several pipelines and a profile handler chooses one per request. A config with
// pipeline: alone has one profile, DefaultProfile, and reads none of the handler's headers.

// DefaultProfile is the name of the one profile of a config that gives pipeline: rather than
// profiles:.
const DefaultProfile = "default"

// Profile is one named pipeline.
type Profile struct {
	// Name is how the handler, the profile header, metrics and traces refer to the profile;
	// lower-case letters, digits and dashes, unique.
	Name     string   `yaml:"name"`
	Pipeline Pipeline `yaml:"pipeline"`
}

// ProfileHandler chooses a request's profile. The rules, first match wins:
//
//  1. Header names a profile: that one (a name the config does not have is the client's error,
//     answered 400, never another profile);
//  2. PredictionHeader, GIE's PredictionBasedRouting, is a boolean: true chooses SLOProfile,
//     false Default;
//  3. Experiment is set: the experiment draws the profile by the request's session
//     (ExperimentProfile, profile_experiment.go); rules 4-6 then never apply;
//  4. the request's objective (x-llm-d-inference-objective) is a key of Objectives: its profile;
//  5. the request carries an SLO header (TTFT or TPOT) and SLOProfile is set: SLOProfile;
//  6. Default.
type ProfileHandler struct {
	// Default is the profile of a request no other rule chooses (default: the first profile).
	Default string `yaml:"default"`
	// Header names a profile explicitly (default x-foresight-profile).
	Header string `yaml:"header"`
	// PredictionHeader is a boolean header, GIE's PredictionBasedRouting (default
	// x-prediction-based-routing).
	PredictionHeader string `yaml:"predictionHeader"`
	// SLOProfile serves requests with an SLO, and those whose PredictionHeader is true; unset,
	// rule 4 never applies and a true PredictionHeader is answered 400.
	SLOProfile string `yaml:"sloProfile"`
	// Objectives maps an objective's name (declared under objectives:) to a profile.
	Objectives map[string]string `yaml:"objectives"`
	// Experiment, when set, splits the requests rules 1 and 2 leave between whole profiles, an
	// A/B experiment of pipelines (profile_experiment.go).
	Experiment *ProfileExperiment `yaml:"experiment"`
}

// Defaults of the profile handler's headers.
const (
	DefaultProfileHeader    = "x-foresight-profile"
	DefaultPredictionHeader = "x-prediction-based-routing"
)

// The rules ChooseProfile reports, for traces and logs.
const (
	RuleHeader     = "header"
	RulePrediction = "prediction"
	RuleObjective  = "objective"
	RuleSLO        = "slo"
	RuleDefault    = "default"
)

// headerRE is an HTTP header name as RFC 9110 allows it (a token), lower case.
var headerRE = regexp.MustCompile("^[a-z0-9!#$%&'*+.^_`|~-]+$")

func (c *Config) applyProfileDefaults() {
	if len(c.Profiles) == 0 {
		return
	}
	if c.ProfileHandler == nil {
		c.ProfileHandler = &ProfileHandler{}
	}
	h := c.ProfileHandler
	h.Default = cmp.Or(h.Default, c.Profiles[0].Name)
	h.Header = cmp.Or(h.Header, DefaultProfileHeader)
	h.PredictionHeader = cmp.Or(h.PredictionHeader, DefaultPredictionHeader)
}

// ProfileNames lists the profiles in the file's order; DefaultProfile alone without profiles:.
func (c *Config) ProfileNames() []string {
	out := []string{}
	for _, pp := range c.pipelines() {
		out = append(out, pp.profile)
	}
	return out
}

// DefaultProfileName is the profile of a request no rule chooses.
func (c *Config) DefaultProfileName() string {
	if len(c.Profiles) == 0 {
		return cmp.Or(c.profile, DefaultProfile)
	}
	return c.ProfileHandler.Default
}

// Profile returns the scheduling profile whose pipeline Pipeline is: set on a copy ForProfile
// made, DefaultProfile otherwise.
func (c *Config) Profile() string { return cmp.Or(c.profile, DefaultProfile) }

// ForProfile returns a copy of c whose Pipeline is the profile's and whose Plugins are those
// that pipeline uses, in the file's order: what pipeline.Build builds one profile from. nil when
// c has no such profile.
func (c *Config) ForProfile(name string) *Config {
	var found *Pipeline
	for _, pp := range c.pipelines() {
		if pp.profile == name {
			found = pp.pl
		}
	}
	if found == nil {
		return nil
	}
	n := c.Clone()
	n.Pipeline = *clonePipeline(found)
	n.Profiles, n.ProfileHandler, n.profile = nil, nil, name
	n.Plugins = slices.DeleteFunc(n.Plugins, func(p PluginSpec) bool { return n.StageOf(p.Name) == sdk.StageUnspecified })
	return n
}

// validateProfiles checks the profiles' names, and that the config gives pipeline: or
// profiles:, not both.
func (c *Config) validateProfiles() error {
	if len(c.Profiles) == 0 {
		if c.ProfileHandler != nil {
			return c.errorAt([]any{"profileHandler"}, "chooses among profiles, and the config has none: give profiles: instead of pipeline:")
		}
		return nil
	}
	if c.hasKey("pipeline") || len(slotsOf(placed{pl: &c.Pipeline})) > 0 {
		return c.errorAt([]any{"pipeline"}, "give pipeline: (one profile) or profiles: (several), not both")
	}
	names := map[string]int{}
	for i, p := range c.Profiles {
		at := []any{"profiles", i, "name"}
		switch {
		case p.Name == "":
			return c.errorAt(at, "missing; every profile needs a name")
		case !nameRE.MatchString(p.Name):
			return c.errorAt(at, "%q must be lower-case letters, digits and dashes", p.Name)
		}
		if j, dup := names[p.Name]; dup {
			return c.errorAt(at, "profile %q is named twice (first as profiles[%d])", p.Name, j)
		}
		names[p.Name] = i
	}
	return nil
}

// validateProfileHandler checks that the handler names declared profiles, objectives and
// header names.
func (c *Config) validateProfileHandler() error {
	h := c.ProfileHandler
	if h == nil {
		return nil
	}
	at := func(field ...any) []any { return append([]any{"profileHandler"}, field...) }
	known := strings.Join(c.ProfileNames(), ", ")
	for _, f := range []struct{ field, name string }{{"default", h.Default}, {"sloProfile", h.SLOProfile}} {
		if f.name != "" && !slices.Contains(c.ProfileNames(), f.name) {
			return c.errorAt(at(f.field), "no profile named %q (profiles: %s)", f.name, known)
		}
	}
	for _, f := range []struct{ field, name string }{{"header", h.Header}, {"predictionHeader", h.PredictionHeader}} {
		if !headerRE.MatchString(f.name) {
			return c.errorAt(at(f.field), "%q is not a header name: lower-case letters, digits and -", f.name)
		}
	}
	if h.Header == h.PredictionHeader {
		return c.errorAt(at("predictionHeader"), "%q is also profileHandler.header; the two need their own headers", h.Header)
	}
	for _, obj := range slices.Sorted(maps.Keys(h.Objectives)) {
		if _, ok := c.Priority(obj); !ok {
			return c.errorAt(at("objectives", obj), "no objective named %q is declared under objectives", obj)
		}
		if p := h.Objectives[obj]; !slices.Contains(c.ProfileNames(), p) {
			return c.errorAt(at("objectives", obj), "no profile named %q (profiles: %s)", p, known)
		}
	}
	return nil
}

// hasKey reports whether the file's top level has key.
func (c *Config) hasKey(key string) bool {
	n := c.root
	if n == nil {
		return false
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// ProfileError is ChooseProfile's error: the request's header asks for what the config cannot
// give. The router answers it 400, naming Header.
type ProfileError struct {
	Header  string
	Message string
}

func (e *ProfileError) Error() string { return e.Message }

// ChooseProfile returns the profile of a request with headers h, objective (its
// x-llm-d-inference-objective, "" without one) and an SLO or not, and the rule that chose it
// (Rule*). Without profiles: it is always DefaultProfile, by RuleDefault, whatever the headers.
// With an experiment a request neither header decides gets ExperimentProfile, to be resolved to
// an arm's profile once its session is known.
func (c *Config) ChooseProfile(h http.Header, objective string, hasSLO bool) (profile, rule string, err error) {
	ph := c.ProfileHandler
	if len(c.Profiles) == 0 || ph == nil {
		return c.DefaultProfileName(), RuleDefault, nil
	}
	if name := strings.TrimSpace(h.Get(ph.Header)); name != "" {
		if !slices.Contains(c.ProfileNames(), name) {
			return "", "", &ProfileError{Header: ph.Header, Message: fmt.Sprintf("%s: no scheduling profile %q: the router's are %s",
				ph.Header, openai.Clip(name), strings.Join(c.ProfileNames(), ", "))}
		}
		return name, RuleHeader, nil
	}
	if raw := strings.TrimSpace(h.Get(ph.PredictionHeader)); raw != "" {
		on, err := strconv.ParseBool(raw)
		switch {
		case err != nil:
			return "", "", &ProfileError{Header: ph.PredictionHeader, Message: fmt.Sprintf("%s %q: must be true or false", ph.PredictionHeader, openai.Clip(raw))}
		case on && ph.SLOProfile == "":
			return "", "", &ProfileError{Header: ph.PredictionHeader, Message: fmt.Sprintf(
				"%s: true asks for prediction-based routing, and the router has no SLO profile (profileHandler.sloProfile)", ph.PredictionHeader)}
		case on:
			return ph.SLOProfile, RulePrediction, nil
		}
		return ph.Default, RulePrediction, nil
	}
	if ph.Experiment != nil {
		return ExperimentProfile, RuleExperiment, nil
	}
	if p, ok := ph.Objectives[objective]; ok && objective != "" {
		return p, RuleObjective, nil
	}
	if hasSLO && ph.SLOProfile != "" {
		return ph.SLOProfile, RuleSLO, nil
	}
	return ph.Default, RuleDefault, nil
}
