// Package config reads the host's YAML configuration: the plugins to run and the pipeline that
// wires them, shaped like llm-d's EndpointPickerConfig. Decoding is strict and every error names
// the file, the line and the field.
package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"gopkg.in/yaml.v3"
)

// Config is the whole host configuration.
type Config struct {
	// Plugins declares every stage implementation the pipeline may use.
	Plugins []PluginSpec `yaml:"plugins"`
	// Pipeline wires the declared plugins into stages: the config's one pipeline, its single
	// scheduling profile "default". A config gives Pipeline or Profiles, not both.
	Pipeline Pipeline `yaml:"pipeline"`
	// Profiles, instead of Pipeline, name several pipelines; ProfileHandler chooses one per
	// request (profiles.go).
	Profiles       []Profile       `yaml:"profiles"`
	ProfileHandler *ProfileHandler `yaml:"profileHandler"`
	// Server, Endpoints, Scrape and Objectives configure the live router (foresight serve); the
	// other commands ignore them.
	Server     Server      `yaml:"server"`
	Endpoints  Endpoints   `yaml:"endpoints"`
	Scrape     Scrape      `yaml:"scrape"`
	Objectives []Objective `yaml:"objectives"`
	// FlowControl holds requests in the router while the pool is saturated (flowcontrol.go).
	FlowControl FlowControl `yaml:"flowControl"`
	// Disaggregation, when set, serves a prefill/decode disaggregated fleet (disaggregation.go).
	Disaggregation *Disaggregation `yaml:"disaggregation"`
	// State, when set, shares requests in flight, prefix records and samples with the other
	// replicas over NATS (state.go).
	State *State `yaml:"state"`
	// KVEvents, when set, reads the engines' KV-cache events for their prefix matches
	// (kvevents.go).
	KVEvents *KVEvents `yaml:"kvEvents"`

	file   string     // the file it was read from, for error messages
	root   *yaml.Node // the parsed document, for line numbers
	edited string     // the edit that made this copy (WithStage), for error messages; "" for the file's own
	// profile is the scheduling profile whose pipeline Pipeline is, on a copy ForProfile made;
	// "" on the file's own config.
	profile string
	// pluginDirs are where plugin binaries may come from (PluginDirs), resolved once from the file.
	pluginDirs []string
}

// PluginSpec declares one plugin: a binary to launch, or a built-in type when Path is empty.
type PluginSpec struct {
	// Name is how the pipeline refers to this plugin; unique, lower-case letters, digits and dashes.
	Name string `yaml:"name"`
	// Type is the kebab-case plugin type; a binary's GetInfo must report exactly this type.
	Type string `yaml:"type"`
	// Path is the plugin binary, relative to the config file's directory unless absolute; empty
	// selects the built-in implementation of Type.
	Path string `yaml:"path"`
	// Args are passed to the binary (e.g. a script for an interpreter given as Path).
	Args []string `yaml:"args"`
	// Env adds environment variables for the binary (e.g. GOMAXPROCS), over the host's own.
	Env map[string]string `yaml:"env"`
	// SHA256, when set, is the binary's expected checksum (64 hex digits), verified at every start.
	SHA256 string `yaml:"sha256"`
	// Version, when set, is a semver constraint the binary's version must satisfy, e.g. ">=1.2.0, <2.0.0".
	Version string `yaml:"version"`
	// Timeout overrides the pipeline's stage timeout for calls to this plugin.
	Timeout time.Duration `yaml:"timeout"`
	// Parameters are sent to the plugin's Configure as a JSON object.
	Parameters map[string]any `yaml:"parameters"`
}

// ParametersJSON returns Parameters as the JSON object Configure receives; nil when the config
// gives none (the plugin keeps its defaults).
func (p *PluginSpec) ParametersJSON() ([]byte, error) {
	if p.Parameters == nil {
		return nil, nil
	}
	b, err := json.Marshal(p.Parameters)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: parameters are not JSON-encodable: %w", p.Name, err)
	}
	return b, nil
}

// Environ returns Env as sorted "KEY=value" entries.
func (p *PluginSpec) Environ() []string {
	out := make([]string, 0, len(p.Env))
	for k, v := range p.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Builtin reports whether the spec selects an in-process implementation.
func (p *PluginSpec) Builtin() bool { return p.Path == "" }

// Pipeline wires plugins into the stages of a scheduling cycle.
type Pipeline struct {
	// Producer, optional, adds latency predictions before the filters run.
	Producer *StageRef `yaml:"producer"`
	// Filters run in order, each narrowing the candidates.
	Filters []StageRef `yaml:"filters"`
	// Scorers run concurrently; their clamped scores are multiplied by Weight and summed.
	Scorers []StageRef `yaml:"scorers"`
	// Admitter, optional, runs beside filters and scorers; a rejection wins over the pick.
	Admitter *StageRef `yaml:"admitter"`
	// Picker orders the candidates; the built-in max-score-picker when absent.
	Picker *StageRef `yaml:"picker"`
	// Detector and Order are flow control's stages, used only while flowControl.enabled: the
	// saturation detector, which says which endpoints have room for a request, and the ordering
	// policy, which gives a queued request its key. Absent, the built-ins the flowControl section
	// configures serve, in process; they are also the fallbacks of these slots.
	Detector *StageRef `yaml:"detector"`
	Order    *StageRef `yaml:"order"`
	// StageTimeout is the least deadline of one stage call (default 25ms): the deadline a slot
	// starts with, which it raises while its own round trips grow slower (see StageTimeoutMax).
	// Past its deadline the stage's fallback applies. A plugin's own Timeout replaces the whole
	// rule with one fixed deadline.
	StageTimeout time.Duration `yaml:"stageTimeout"`
	// StageTimeoutMax caps the deadline a slot adapts to (default 4 × StageTimeout, at most
	// MaxStageTimeout): twice the p99 of its recent successful round trips, never below
	// StageTimeout. Equal to StageTimeout, the deadline is fixed.
	StageTimeoutMax time.Duration `yaml:"stageTimeoutMax"`
	// StageTimeoutSLOShare bounds a stage call's deadline by this share of the request's TTFT
	// objective, where it has one (default 0.1); in (0, 1].
	StageTimeoutSLOShare float64 `yaml:"stageTimeoutSLOShare"`
	// PredictionMaxAge is how old the producer's last predictions for an endpoint may be, by the
	// cycles' clocks, to stand in for a producer that failed or missed its deadline (default 500ms).
	PredictionMaxAge time.Duration `yaml:"predictionMaxAge"`
	// MaxBatch caps how many cycles one stage call, and one cohort, may carry (default 16).
	MaxBatch int `yaml:"maxBatch"`
	// MaxCohorts caps the cohorts of cycles travelling the pipeline at once (default 2); a further
	// cohort starts only while a full batch is waiting.
	MaxCohorts int `yaml:"maxCohorts"`
}

// StageRef points a pipeline slot at a declared plugin, or at the arms of an experiment.
type StageRef struct {
	// PluginRef is the Name of a plugin in Config.Plugins (empty when Arms are given).
	PluginRef string `yaml:"pluginRef"`
	// Weight multiplies a scorer's scores (scorers only; default 1).
	Weight *float64 `yaml:"weight"`
	// Arms, instead of PluginRef, split the slot's requests between plugins of its stage by a
	// hash of the session (the request id when there is none), in proportion to their weights.
	// The first arm is the baseline the others are compared with. One slot at a time may hold
	// an experiment (arms or a shadow).
	Arms []Arm `yaml:"arms"`
	// Shadow is a plugin of the slot's stage that sees the same cycles; its decision is recorded
	// and compared with the one enacted, never enacted itself.
	Shadow *Arm `yaml:"shadow"`
}

// Arm is one plugin of an experiment.
type Arm struct {
	// Name labels the arm in metrics and reports (default: its PluginRef).
	Name      string `yaml:"name"`
	PluginRef string `yaml:"pluginRef"`
	// Weight is the arm's share of the requests, relative to the other arms' (default 1; a
	// shadow takes none).
	Weight *float64 `yaml:"weight"`
}

// ArmName returns the arm's name, its plugin's when unnamed.
func (a Arm) ArmName() string {
	if a.Name != "" {
		return a.Name
	}
	return a.PluginRef
}

// ArmWeight returns the arm's share (1 when unset).
func (a Arm) ArmWeight() float64 {
	if a.Weight == nil {
		return 1
	}
	return *a.Weight
}

// Experimental reports whether the slot holds an experiment: arms or a shadow.
func (r *StageRef) Experimental() bool { return len(r.Arms) > 0 || r.Shadow != nil }

// Primaries returns the plugins that serve the slot's requests: its PluginRef, or its arms'.
func (r *StageRef) Primaries() []string {
	if len(r.Arms) == 0 {
		return []string{r.PluginRef}
	}
	out := make([]string, len(r.Arms))
	for i, a := range r.Arms {
		out[i] = a.PluginRef
	}
	return out
}

// Defaults for optional pipeline settings.
const (
	DefaultStageTimeout = 25 * time.Millisecond
	// DefaultStageTimeoutMaxFactor gives the default StageTimeoutMax: this many StageTimeouts.
	DefaultStageTimeoutMaxFactor = 4
	DefaultStageTimeoutSLOShare  = 0.1
	DefaultPredictionMaxAge      = 500 * time.Millisecond
	DefaultMaxBatch              = 16
	DefaultMaxCohorts            = 2
)

// Load reads, decodes and validates the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and validates data as if read from file (used in messages and to resolve
// relative plugin paths).
func Parse(file string, data []byte) (*Config, error) {
	c := &Config{file: file, root: &yaml.Node{}}
	if err := yaml.Unmarshal(data, c.root); err != nil {
		return nil, c.yamlError(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the file is empty", file)
		}
		return nil, c.yamlError(err)
	}
	c.applyDefaults()
	if err := c.resolvePluginDirs(); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) applyDefaults() {
	c.Pipeline.applyDefaults()
	for i := range c.Profiles {
		c.Profiles[i].Pipeline.applyDefaults()
	}
	c.applyProfileDefaults()
	c.applyRouterDefaults()
	c.FlowControl.applyDefaults()
	c.Disaggregation.applyDefaults()
	c.State.applyDefaults()
	c.KVEvents.applyDefaults()
}

func (pl *Pipeline) applyDefaults() {
	pl.StageTimeout = cmp.Or(pl.StageTimeout, DefaultStageTimeout)
	if pl.StageTimeoutMax == 0 && pl.StageTimeout > 0 {
		pl.StageTimeoutMax = min(DefaultStageTimeoutMaxFactor*pl.StageTimeout, max(pl.StageTimeout, MaxStageTimeout))
	}
	pl.StageTimeoutSLOShare = cmp.Or(pl.StageTimeoutSLOShare, DefaultStageTimeoutSLOShare)
	pl.PredictionMaxAge = cmp.Or(pl.PredictionMaxAge, DefaultPredictionMaxAge)
	pl.MaxBatch = cmp.Or(pl.MaxBatch, DefaultMaxBatch)
	pl.MaxCohorts = cmp.Or(pl.MaxCohorts, DefaultMaxCohorts)
}

// File returns the file the configuration was read from.
func (c *Config) File() string { return c.file }

// Dir returns the absolute directory of the config file, against which relative paths resolve.
func (c *Config) Dir() string {
	dir, err := filepath.Abs(filepath.Dir(c.file))
	if err != nil {
		return filepath.Dir(c.file)
	}
	return dir
}

// Plugin returns the declared plugin called name, or nil.
func (c *Config) Plugin(name string) *PluginSpec {
	for i := range c.Plugins {
		if c.Plugins[i].Name == name {
			return &c.Plugins[i]
		}
	}
	return nil
}

// ResolvePath returns the binary path of p: absolute paths as they are, relative ones against the
// config file's directory.
func (c *Config) ResolvePath(p *PluginSpec) string {
	return sdk.ResolvePathIn(filepath.Dir(c.file), p.Path)
}

// WeightOr1 returns the scorer weight of r (1 when unset).
func (r StageRef) WeightOr1() float64 {
	if r.Weight == nil {
		return 1
	}
	return *r.Weight
}
