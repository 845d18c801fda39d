package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	n.Pipeline = *clonePipeline(&c.Pipeline)
	n.Profiles = slices.Clone(c.Profiles)
	for i := range n.Profiles {
		n.Profiles[i].Pipeline = *clonePipeline(&c.Profiles[i].Pipeline)
	}
	if h := c.ProfileHandler; h != nil {
		ph := *h
		ph.Objectives = maps.Clone(h.Objectives)
		ph.Experiment = cloneProfileExperiment(h.Experiment)
		n.ProfileHandler = &ph
	}
	n.Endpoints.Static = slices.Clone(c.Endpoints.Static)
	for i := range n.Endpoints.Static {
		n.Endpoints.Static[i].Labels = maps.Clone(n.Endpoints.Static[i].Labels)
	}
	n.Objectives = slices.Clone(c.Objectives)
	if d := c.Disaggregation; d != nil {
		dd := *d
		n.Disaggregation = &dd
	}
	n.Server.PluginDirs = slices.Clone(c.Server.PluginDirs)
	return &n
}

func clonePipeline(p *Pipeline) *Pipeline {
	pl := *p
	pl.Producer, pl.Admitter, pl.Picker = cloneRef(p.Producer), cloneRef(p.Admitter), cloneRef(p.Picker)
	pl.Detector, pl.Order = cloneRef(p.Detector), cloneRef(p.Order)
	pl.Filters = cloneRefs(p.Filters)
	pl.Scorers = cloneRefs(p.Scorers)
	return &pl
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

// SlotNames lists the default profile's slots by the names WithStage takes, in stage order:
// producer, filters.0 …, scorers.0 …, admitter, picker, detector, order.
func (c *Config) SlotNames() []string { return c.ProfileSlotNames(c.DefaultProfileName()) }

// ProfileSlotNames lists a profile's slots as SlotNames does; nil for a profile c does not have.
func (c *Config) ProfileSlotNames(profile string) []string {
	var out []string
	for _, s := range c.profileSlots(profile) {
		out = append(out, s.name)
	}
	return out
}

// profileSlots is the slots of the named profile's pipeline; nil for a profile c does not have.
func (c *Config) profileSlots(profile string) []slot {
	for _, pp := range c.pipelines() {
		if pp.profile == profile {
			return slotsOf(pp)
		}
	}
	return nil
}

// ErrNoSlot is SlotRef's and WithStage's error for a slot name the pipeline does not have, and
// ErrNoProfile for a profile the config does not have.
var (
	ErrNoSlot    = errors.New("no slot")
	ErrNoProfile = errors.New("no profile")
)

// SlotRef returns the reference the default profile's slot called name holds, or an error
// listing the slots.
func (c *Config) SlotRef(name string) (*StageRef, sdk.Stage, error) {
	return c.ProfileSlotRef(c.DefaultProfileName(), name)
}

// ProfileSlotRef is SlotRef in the named profile.
func (c *Config) ProfileSlotRef(profile, name string) (*StageRef, sdk.Stage, error) {
	if !slices.Contains(c.ProfileNames(), profile) {
		return nil, sdk.StageUnspecified, fmt.Errorf("%w %q; the config's are %s", ErrNoProfile, profile, strings.Join(c.ProfileNames(), ", "))
	}
	for _, s := range c.profileSlots(profile) {
		if s.name == name {
			return s.ref, s.kind, nil
		}
	}
	where := "the pipeline"
	if len(c.Profiles) > 0 {
		where = "profile " + strconv.Quote(profile)
	}
	return nil, sdk.StageUnspecified, fmt.Errorf("%w %q in %s; its slots are %s", ErrNoSlot, name, where, strings.Join(c.ProfileSlotNames(profile), ", "))
}

// WithStage returns a copy of c whose slot (a name from ProfileSlotNames) in profile ("": the
// default profile) is served by spec, validated as a whole; an experiment the slot held (arms,
// shadow) ends. When spec.Name is empty it takes the name of the plugin the slot uses now (an
// experiment's first arm's), and a declared plugin of that name is replaced wherever the
// pipeline uses it; when other profiles use that plugin too, spec must be named (the same name
// replaces it in every profile, a new one in this profile only). A new name adds a plugin for
// this slot only. Plugins no longer used by any slot are dropped. weight, when not nil, sets a
// scorer slot's weight. Relative paths resolve against the config file's directory, as in the
// file. The plugin spec declares must pass the admin API's rules, checked before anything runs
// (checkSwap: a binary inside the plugin directories, pinned by sha256). origin (e.g. "PUT
// /admin/stages/scorers.0") prefixes validation errors, which have no line to point at.
func (c *Config) WithStage(profile, slot string, spec PluginSpec, weight *float64, origin string) (*Config, error) {
	n := c.Clone()
	n.root = &yaml.Node{}
	n.edited = origin
	profile = cmp.Or(profile, n.DefaultProfileName())
	ref, _, err := n.ProfileSlotRef(profile, slot)
	if err != nil {
		return nil, err
	}
	if spec.Name == "" {
		spec.Name = ref.Primaries()[0]
		if others := n.profilesUsing(spec.Name, profile); len(others) > 0 {
			return nil, fmt.Errorf("%s: plugin %q also serves profile %s: name the new plugin (\"name\"): %q replaces it in every profile, "+
				"a new name in profile %q only", origin, spec.Name, strings.Join(others, ", "), spec.Name, profile)
		}
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
	if err := n.checkSwap(origin, n.Plugin(spec.Name)); err != nil {
		return nil, err
	}
	return n, nil
}

// profilesUsing lists the profiles other than except whose pipelines use the named plugin.
func (c *Config) profilesUsing(plugin, except string) []string {
	var out []string
	for _, pp := range c.pipelines() {
		if pp.profile == except {
			continue
		}
		for _, s := range slotsOf(pp) {
			refs := s.ref.Primaries()
			if s.ref.Shadow != nil {
				refs = append(refs, s.ref.Shadow.PluginRef)
			}
			if slices.Contains(refs, plugin) {
				out = append(out, pp.profile)
				break
			}
		}
	}
	return out
}

// Origin describes where c came from: its file, or the edit that made it.
func (c *Config) Origin() string {
	if c.edited != "" {
		return c.edited + " (on " + c.file + ")"
	}
	return c.file
}
