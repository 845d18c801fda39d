package config

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/foresight-router/foresight/plugins/sdk"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	typeRE = nameRE
)

func (c *Config) validate() error {
	seen := map[string]int{}
	for i := range c.Plugins {
		if err := c.validatePlugin(i, seen); err != nil {
			return err
		}
	}
	if err := c.validatePluginDirs(); err != nil {
		return err
	}
	if err := c.validateProfiles(); err != nil {
		return err
	}
	used := map[string]sdk.Stage{} // plugin name -> the stage it serves, in every profile
	var experiment []any
	for _, pp := range c.pipelines() {
		if err := c.validatePipeline(pp, used, &experiment); err != nil {
			return err
		}
	}
	for i := range c.Plugins {
		if _, ok := used[c.Plugins[i].Name]; !ok {
			return c.errorAt([]any{"plugins", i, "name"}, "plugin %q is declared but the pipeline does not use it", c.Plugins[i].Name)
		}
	}
	if err := c.validateProfileHandler(); err != nil {
		return err
	}
	if err := c.validateProfileExperiment(experiment); err != nil {
		return err
	}
	if err := c.validateFlowControl(); err != nil {
		return err
	}
	if err := c.validateDisaggregation(); err != nil {
		return err
	}
	if err := c.validateState(); err != nil {
		return err
	}
	if err := c.ValidateKVEvents(); err != nil {
		return err
	}
	return c.ValidateRouter()
}
func (c *Config) validatePlugin(i int, seen map[string]int) error {
	p := &c.Plugins[i]
	at := func(field string) []any { return []any{"plugins", i, field} }
	switch {
	case p.Name == "":
		return c.errorAt(at("name"), "missing; every plugin needs a name the pipeline can refer to")
	case !nameRE.MatchString(p.Name):
		return c.errorAt(at("name"), "%q must be lower-case letters, digits and dashes", p.Name)
	case p.Type == "":
		return c.errorAt(at("type"), "plugin %q: missing type", p.Name)
	case !typeRE.MatchString(p.Type):
		return c.errorAt(at("type"), "plugin %q: type %q must be kebab-case", p.Name, p.Type)
	}
	if j, dup := seen[p.Name]; dup {
		return c.errorAt(at("name"), "plugin %q is declared twice (first as plugins[%d])", p.Name, j)
	}
	seen[p.Name] = i
	if p.Builtin() {
		if p.SHA256 != "" || p.Version != "" || len(p.Args) > 0 || len(p.Env) > 0 {
			return c.errorAt(at("path"), "plugin %q: sha256, version, args and env need a path to a binary", p.Name)
		}
	} else if st, err := os.Stat(c.ResolvePath(p)); err != nil {
		return c.errorAt(at("path"), "plugin %q: binary %s: %v", p.Name, c.ResolvePath(p), errors.Unwrap(err))
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		return c.errorAt(at("path"), "plugin %q: %s is not an executable file", p.Name, c.ResolvePath(p))
	}
	if p.SHA256 != "" {
		if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 {
			return c.errorAt(at("sha256"), "plugin %q: want 64 hex digits, got %q", p.Name, p.SHA256)
		}
	}
	if p.Version != "" {
		if _, err := semver.NewConstraint(p.Version); err != nil {
			return c.errorAt(at("version"), "plugin %q: invalid version constraint %q: %v", p.Name, p.Version, err)
		}
	}
	for k := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return c.errorAt(at("env"), "plugin %q: invalid variable name %q", p.Name, k)
		}
	}
	if p.Timeout < 0 || p.Timeout > MaxStageTimeout {
		return c.errorAt(at("timeout"), "plugin %q: must be in [0s, %v] (0: the pipeline's stageTimeout), got %v", p.Name, MaxStageTimeout, p.Timeout)
	}
	return nil
}

// MaxStageTimeout bounds the deadline of a stage call (pipeline.stageTimeout, a plugin's
// timeout). A plugin that stops answering holds every decision for its deadline, and is taken
// for hung only after missing deadlines for 2 s: a longer deadline would stall requests for as
// long and, at an hour, keep the fallback and the restart from ever coming.
const MaxStageTimeout = 10 * time.Second

// MaxPredictionMaxAge bounds pipeline.predictionMaxAge: a prediction a minute old describes
// queues that have long since turned over.
const MaxPredictionMaxAge = time.Minute

// validatePipeline checks one pipeline (the config's, or a profile's); used collects the stage
// each plugin serves across all of them (a plugin serves one stage), experiment the slot that
// holds the config's one experiment.
func (c *Config) validatePipeline(pp placed, used map[string]sdk.Stage, experiment *[]any) error {
	pl := pp.pl
	at := func(field ...any) []any { return append(slices.Clone(pp.base), field...) }
	if pl.StageTimeout <= 0 || pl.StageTimeout > MaxStageTimeout {
		return c.errorAt(at("stageTimeout"), "must be in (0s, %v], got %v", MaxStageTimeout, pl.StageTimeout)
	}
	if pl.StageTimeoutMax < pl.StageTimeout || pl.StageTimeoutMax > MaxStageTimeout {
		return c.errorAt(at("stageTimeoutMax"), "must be in [stageTimeout (%v), %v], got %v", pl.StageTimeout, MaxStageTimeout, pl.StageTimeoutMax)
	}
	if !(pl.StageTimeoutSLOShare > 0 && pl.StageTimeoutSLOShare <= 1) {
		return c.errorAt(at("stageTimeoutSLOShare"), "must be in (0, 1], got %v", pl.StageTimeoutSLOShare)
	}
	if pl.PredictionMaxAge <= 0 || pl.PredictionMaxAge > MaxPredictionMaxAge {
		return c.errorAt(at("predictionMaxAge"), "must be in (0s, %v], got %v", MaxPredictionMaxAge, pl.PredictionMaxAge)
	}
	if pl.MaxBatch < 1 || pl.MaxBatch > 1024 {
		return c.errorAt(at("maxBatch"), "must be in [1, 1024], got %d", pl.MaxBatch)
	}
	if pl.MaxCohorts < 1 || pl.MaxCohorts > 64 {
		return c.errorAt(at("maxCohorts"), "must be in [1, 64], got %d", pl.MaxCohorts)
	}
	checkRef := func(name string, kind sdk.Stage, path []any) error {
		if name == "" {
			return c.errorAt(append(path, "pluginRef"), "missing")
		}
		if c.Plugin(name) == nil {
			return c.errorAt(append(path, "pluginRef"), "no plugin named %q is declared under plugins", name)
		}
		if prev, ok := used[name]; ok && prev != kind {
			return c.errorAt(append(path, "pluginRef"), "plugin %q already serves as %s; a plugin serves one stage", name, prev)
		}
		used[name] = kind
		return nil
	}
	check := func(ref *StageRef, kind sdk.Stage, path []any) error {
		if len(ref.Arms) == 0 {
			if err := checkRef(ref.PluginRef, kind, path); err != nil {
				return err
			}
		} else if err := c.checkArms(ref, kind, path, checkRef); err != nil {
			return err
		}
		if ref.Weight != nil && kind != sdk.StageScorer {
			return c.errorAt(append(path, "weight"), "only scorers take a weight")
		}
		if ref.Weight != nil && (*ref.Weight < 0 || *ref.Weight > 1e6 || *ref.Weight != *ref.Weight) {
			return c.errorAt(append(path, "weight"), "must be in [0, 1e6], got %v", *ref.Weight)
		}
		if sh := ref.Shadow; sh != nil {
			at := append(path, "shadow")
			if kind == sdk.StageDetector || kind == sdk.StageOrder {
				// A shadow's decisions are compared with the pipeline's pick; flow control's stages
				// decide when and in which order, which that comparison does not cover.
				return c.errorAt(at, "flow control's %s slot takes arms, not a shadow", kind)
			}
			if sh.Weight != nil {
				return c.errorAt(append(at, "weight"), "a shadow takes no share of the requests")
			}
			if err := checkRef(sh.PluginRef, kind, at); err != nil {
				return err
			}
			for _, name := range ref.Primaries() {
				if name == sh.PluginRef {
					return c.errorAt(append(at, "pluginRef"), "plugin %q already serves this slot; a shadow must be another plugin", name)
				}
			}
		}
		return nil
	}
	for _, s := range slotsOf(pp) {
		if err := check(s.ref, s.kind, s.path); err != nil {
			return err
		}
		if s.ref.Experimental() {
			// One experiment in the whole config: the router keeps one report (GET /admin/experiments).
			if *experiment != nil {
				return c.errorAt(s.path, "only one slot may hold an experiment (arms or a shadow), and %s does", fieldPath(*experiment))
			}
			*experiment = s.path
		}
	}
	return nil
}

// checkArms validates an experiment's arms; checkRef validates each arm's plugin.
func (c *Config) checkArms(ref *StageRef, kind sdk.Stage, path []any, checkRef func(string, sdk.Stage, []any) error) error {
	if ref.PluginRef != "" {
		return c.errorAt(append(path, "pluginRef"), "a slot holds a pluginRef or arms, not both")
	}
	if len(ref.Arms) < 2 {
		return c.errorAt(append(path, "arms"), "an experiment needs at least two arms, got %d", len(ref.Arms))
	}
	names := map[string]int{}
	total := 0.0
	for i, a := range ref.Arms {
		at := append(path, "arms", i)
		if err := checkRef(a.PluginRef, kind, at); err != nil {
			return err
		}
		name := a.ArmName()
		if !nameRE.MatchString(name) {
			return c.errorAt(append(at, "name"), "%q must be lower-case letters, digits and dashes", name)
		}
		if j, dup := names[name]; dup {
			return c.errorAt(append(at, "name"), "arm %q is named twice (first as arms[%d])", name, j)
		}
		names[name] = i
		if w := a.ArmWeight(); !(w >= 0 && w <= 1e6) {
			return c.errorAt(append(at, "weight"), "must be in [0, 1e6], got %v", w)
		}
		total += a.ArmWeight()
	}
	if total <= 0 {
		return c.errorAt(append(path, "arms"), "every arm has weight 0: no request would be served")
	}
	if sh := ref.Shadow; sh != nil {
		if _, dup := names[sh.ArmName()]; dup {
			return c.errorAt(append(path, "shadow", "name"), "%q already names an arm", sh.ArmName())
		}
	}
	return nil
}

// Experiment returns the slot that holds the experiment (its name and reference), or "" and nil.
func (c *Config) Experiment() (string, *StageRef) {
	for _, s := range c.slots() {
		if s.ref.Experimental() {
			return s.name, s.ref
		}
	}
	return "", nil
}

// placed is a pipeline with the profile it serves and where it sits in the YAML.
type placed struct {
	profile string
	pl      *Pipeline
	base    []any
}

// pipelines lists the config's pipelines: its one (the profile "default"), or every profile's,
// in the file's order.
func (c *Config) pipelines() []placed {
	if len(c.Profiles) == 0 {
		return []placed{{cmp.Or(c.profile, DefaultProfile), &c.Pipeline, []any{"pipeline"}}}
	}
	out := make([]placed, len(c.Profiles))
	for i := range c.Profiles {
		out[i] = placed{c.Profiles[i].Name, &c.Profiles[i].Pipeline, []any{"profiles", i, "pipeline"}}
	}
	return out
}

// slot is one place in a pipeline that refers to a plugin.
type slot struct {
	ref  *StageRef
	kind sdk.Stage
	name string // as WithStage takes it: producer, filters.0, scorers.1, admitter, picker
	path []any  // where it sits in the YAML
}

// slots lists every pipeline's references, each pipeline in stage order.
func (c *Config) slots() []slot {
	var out []slot
	for _, pp := range c.pipelines() {
		out = append(out, slotsOf(pp)...)
	}
	return out
}

// slotsOf lists one pipeline's references in stage order.
func slotsOf(pp placed) []slot {
	pl := pp.pl
	var out []slot
	add := func(ref *StageRef, kind sdk.Stage, field ...any) {
		parts := make([]string, len(field))
		for i, f := range field {
			parts[i] = fmt.Sprint(f)
		}
		out = append(out, slot{ref, kind, strings.Join(parts, "."), append(slices.Clone(pp.base), field...)})
	}
	if pl.Producer != nil {
		add(pl.Producer, sdk.StageProducer, "producer")
	}
	for i := range pl.Filters {
		add(&pl.Filters[i], sdk.StageFilter, "filters", i)
	}
	for i := range pl.Scorers {
		add(&pl.Scorers[i], sdk.StageScorer, "scorers", i)
	}
	if pl.Admitter != nil {
		add(pl.Admitter, sdk.StageAdmitter, "admitter")
	}
	if pl.Picker != nil {
		add(pl.Picker, sdk.StagePicker, "picker")
	}
	if pl.Detector != nil {
		add(pl.Detector, sdk.StageDetector, "detector")
	}
	if pl.Order != nil {
		add(pl.Order, sdk.StageOrder, "order")
	}
	return out
}

// StageOf returns the stage the named plugin serves in the pipeline (in any profile), or
// sdk.StageUnspecified when no pipeline uses it.
func (c *Config) StageOf(name string) sdk.Stage {
	for _, s := range c.slots() {
		refs := s.ref.Primaries()
		if s.ref.Shadow != nil {
			refs = append(refs, s.ref.Shadow.PluginRef)
		}
		for _, r := range refs {
			if r == name {
				return s.kind
			}
		}
	}
	return sdk.StageUnspecified
}

// UnmarshalYAML reads a port as a number (8000) or a container port's name (http); a quoted
// number is a name, which validation then refuses.
func (p *PortRef) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a port number (8000) or a container port's name (http)", n.Line)}}
	}
	*p = PortRef{}
	if n.Tag == "!!int" {
		if err := n.Decode(&p.Number); err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a port number", n.Line, n.Value)}}
		}
		return nil
	}
	p.Name = n.Value
	return nil
}

// validateKubernetes checks endpoints.kubernetes: what it watches, named as the API server
// would accept, and the ports to use.
func (c *Config) validateKubernetes() error {
	k := c.Endpoints.Kubernetes
	if k == nil {
		return nil
	}
	at := func(field ...any) []any { return append([]any{"endpoints", "kubernetes"}, field...) }
	if c.Endpoints.File != "" {
		return c.errorAt(at(), "cannot be combined with endpoints.file: the cluster is the source of the list "+
			"(endpoints.static may stay beside it)")
	}
	switch {
	case k.InferencePool == "" && len(k.Selector) == 0:
		return c.errorAt(at(), "name the pods: inferencePool (an InferencePool of the namespace) or selector "+
			"(their labels) with targetPort; got neither")
	case k.InferencePool != "" && len(k.Selector) > 0:
		return c.errorAt(at("selector"), "give inferencePool or selector, not both")
	}
	if msgs := validation.IsDNS1123Label(k.Namespace); k.Namespace != "" && len(msgs) > 0 {
		return c.errorAt(at("namespace"), "%q is not a namespace name: %s", k.Namespace, strings.Join(msgs, "; "))
	}
	if k.InferencePool != "" {
		if msgs := validation.IsDNS1123Subdomain(k.InferencePool); len(msgs) > 0 {
			return c.errorAt(at("inferencePool"), "%q is not an object name: %s", k.InferencePool, strings.Join(msgs, "; "))
		}
		if !k.TargetPort.IsZero() {
			return c.errorAt(at("targetPort"), "the InferencePool names its ports (spec.targetPorts); remove targetPort")
		}
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(k.Selector)) {
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return c.errorAt(at("selector"), "%q is not a label name: %s", key, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(k.Selector[key]); len(msgs) > 0 {
			return c.errorAt(at("selector", key), "%q is not a label value: %s", k.Selector[key], strings.Join(msgs, "; "))
		}
	}
	switch p := k.TargetPort; {
	case p.IsZero():
		return c.errorAt(at("targetPort"), "required with a selector: the pods' port, a number (8000) or a container port's name (http)")
	case p.Name == "" && (p.Number < 1 || p.Number > 65535):
		return c.errorAt(at("targetPort"), "must be in [1, 65535], got %d", p.Number)
	case p.Name != "":
		if msgs := validation.IsValidPortName(p.Name); len(msgs) > 0 {
			return c.errorAt(at("targetPort"), "%q is not a container port's name: %s", p.Name, strings.Join(msgs, "; "))
		}
	}
	return nil
}
