package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"gopkg.in/yaml.v3"
)

// Clone returns a deep copy of c (plugin parameters are copied one level deep: their values are
// never modified in place).
func (c *Config) Clone() *Config {
	n := *c
	n.Plugins = slices.Clone(c.Plugins)
	for i := range n.Plugins {
		p := &n.Plugins[i]
		p.Args = slices.Clone(p.Args)
		p.Env = maps.Clone(p.Env)
		p.Parameters = maps.Clone(p.Parameters)
	}
	pl := &n.Pipeline
	pl.Producer, pl.Admitter, pl.Picker = cloneRef(pl.Producer), cloneRef(pl.Admitter), cloneRef(pl.Picker)
	pl.Filters = cloneRefs(pl.Filters)
	pl.Scorers = cloneRefs(pl.Scorers)
	n.Endpoints.Static = slices.Clone(c.Endpoints.Static)
	for i := range n.Endpoints.Static {
		n.Endpoints.Static[i].Labels = maps.Clone(n.Endpoints.Static[i].Labels)
	}
	n.Objectives = slices.Clone(c.Objectives)
	return &n
}

func cloneRef(r *StageRef) *StageRef {
	if r == nil {
		return nil
	}
	c := *r
	c.Weight = clonePtr(r.Weight)
	c.Arms = slices.Clone(r.Arms)
	for i := range c.Arms {
		c.Arms[i].Weight = clonePtr(c.Arms[i].Weight)
	}
	if r.Shadow != nil {
		sh := *r.Shadow
		c.Shadow = &sh
	}
	return &c
}

func cloneRefs(refs []StageRef) []StageRef {
	out := slices.Clone(refs)
	for i := range out {
		out[i] = *cloneRef(&out[i])
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// SlotNames lists the pipeline's slots by the names WithStage takes, in stage order: producer,
// filters.0 …, scorers.0 …, admitter, picker.
func (c *Config) SlotNames() []string {
	var out []string
	for _, s := range c.slots() {
		out = append(out, slotName(s.path))
	}
	return out
}

// slotName turns a slot's YAML path into its name: [pipeline producer] → producer,
// [pipeline scorers 1] → scorers.1.
func slotName(path []any) string {
	parts := make([]string, 0, len(path)-1)
	for _, p := range path[1:] {
		parts = append(parts, fmt.Sprint(p))
	}
	return strings.Join(parts, ".")
}

// ErrNoSlot is SlotRef's and WithStage's error for a slot name the pipeline does not have.
var ErrNoSlot = errors.New("no slot")

// SlotRef returns the reference the slot called name holds, or an error listing the slots.
func (c *Config) SlotRef(name string) (*StageRef, sdk.Stage, error) {
	for _, s := range c.slots() {
		if slotName(s.path) == name {
			return s.ref, s.kind, nil
		}
	}
	return nil, sdk.StageUnspecified, fmt.Errorf("%w %q in the pipeline; its slots are %s", ErrNoSlot, name, strings.Join(c.SlotNames(), ", "))
}

// WithStage returns a copy of c whose slot (a name from SlotNames) is served by spec, validated as
// a whole; an experiment the slot held (arms, shadow) ends. When spec.Name is empty it takes the
// name of the plugin the slot uses now (an experiment's first arm's), and a declared plugin of
// that name is replaced wherever the pipeline uses it; a new name adds a plugin for this slot
// only. Plugins no longer used by any slot are dropped. weight, when not
// nil, sets a scorer slot's weight. Relative paths resolve against the config file's directory,
// as in the file. origin (e.g. "PUT /admin/stages/scorers.0") prefixes validation errors, which
// have no line to point at.
func (c *Config) WithStage(slot string, spec PluginSpec, weight *float64, origin string) (*Config, error) {
	n := c.Clone()
	n.root = &yaml.Node{}
	n.edited = origin
	ref, _, err := n.SlotRef(slot)
	if err != nil {
		return nil, err
	}
	if spec.Name == "" {
		spec.Name = ref.Primaries()[0]
	}
	if weight != nil {
		ref.Weight = clonePtr(weight)
	}
	ref.PluginRef, ref.Arms, ref.Shadow = spec.Name, nil, nil
	if old := n.Plugin(spec.Name); old != nil {
		*old = spec
	} else {
		n.Plugins = append(n.Plugins, spec)
	}
	n.Plugins = slices.DeleteFunc(n.Plugins, func(p PluginSpec) bool { return n.StageOf(p.Name) == sdk.StageUnspecified })
	n.applyDefaults()
	if err := n.validate(); err != nil {
		return nil, err
	}
	return n, nil
}

// Origin describes where c came from: its file, or the edit that made it.
func (c *Config) Origin() string {
	if c.edited != "" {
		return c.edited + " (on " + c.file + ")"
	}
	return c.file
}
