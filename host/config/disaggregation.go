package config

import (
	"cmp"
	"slices"
	"strings"

	"github.com/foresight-router/foresight/host/endpoints"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Disaggregation serves a prefill/decode disaggregated fleet: every request gets a decode server
// from DecodeProfile's pipeline, then a prefill server from PrefillProfile's, and goes as two
// hops (vLLM's KV connector protocol) or, when Split allows, whole to its decode server. Without
// the section the router sends every request whole and reads no role.
type Disaggregation struct {
	// RoleLabel is the endpoint label holding its role: prefill, decode or both (default
	// llm-d.ai/role, llm-d's; endpoints.RoleOf lists the values read). An endpoint without it
	// serves as decode.
	RoleLabel string `yaml:"roleLabel"`
	// Split says when a request is split: SplitAdaptive (default) lets the prefill pipeline choose
	// between the prefill servers and serving the request whole on its decode server;
	// SplitAlways splits every request that can be; SplitNever serves every request whole on a
	// decode server (a baseline).
	Split string `yaml:"split"`
	// DecodeProfile picks the decode server, PrefillProfile the prefill server (default: the
	// profile the handler chooses, so one pipeline makes both picks). Every other profile's
	// requests go whole to decode servers.
	DecodeProfile  string `yaml:"decodeProfile"`
	PrefillProfile string `yaml:"prefillProfile"`
	// PrefillHeader names the prefill server (host:port) to the decode server's sidecar when the
	// router is a gateway's endpoint picker (default x-prefiller-host-port, llm-d's).
	PrefillHeader string `yaml:"prefillHeader"`
}

// The split modes.
const (
	SplitAdaptive = "adaptive"
	SplitAlways   = "always"
	SplitNever    = "never"
)

// DefaultPrefillHeader is the header llm-d's routing sidecar reads the prefill server from
// (llm-d-inference-scheduler, pkg/common/routing: PrefillEndpointHeader).
const DefaultPrefillHeader = "x-prefiller-host-port"

// Disaggregate gives c a disaggregation section, with its defaults, when it has none, and
// returns it: what serve's --roles and --split edit.
func (c *Config) Disaggregate() *Disaggregation {
	if c.Disaggregation == nil {
		c.Disaggregation = &Disaggregation{}
		c.Disaggregation.applyDefaults()
	}
	return c.Disaggregation
}

// ValidateDisaggregation checks the section's fields and the static endpoints' roles, as the file's
// are: an error names the field.
func (c *Config) ValidateDisaggregation() error { return c.validateDisaggregation() }

func (d *Disaggregation) applyDefaults() {
	if d == nil {
		return
	}
	d.RoleLabel = cmp.Or(d.RoleLabel, endpoints.DefaultRoleLabel)
	d.Split = cmp.Or(d.Split, SplitAdaptive)
	d.PrefillHeader = cmp.Or(d.PrefillHeader, DefaultPrefillHeader)
}

// validateDisaggregation checks the section's fields and the static endpoints' roles.
func (c *Config) validateDisaggregation() error {
	d := c.Disaggregation
	if d == nil {
		return nil
	}
	at := func(field ...any) []any { return append([]any{"disaggregation"}, field...) }
	if !slices.Contains([]string{SplitAdaptive, SplitAlways, SplitNever}, d.Split) {
		return c.errorAt(at("split"), "%q is not a split mode: adaptive, always or never", d.Split)
	}
	if msgs := validation.IsQualifiedName(d.RoleLabel); len(msgs) > 0 {
		return c.errorAt(at("roleLabel"), "%q is not a label name: %s", d.RoleLabel, strings.Join(msgs, "; "))
	}
	if !headerRE.MatchString(d.PrefillHeader) {
		return c.errorAt(at("prefillHeader"), "%q is not a header name: lower-case letters, digits and -", d.PrefillHeader)
	}
	known := c.ProfileNames()
	for _, f := range []struct{ field, name string }{{"decodeProfile", d.DecodeProfile}, {"prefillProfile", d.PrefillProfile}} {
		if f.name != "" && !slices.Contains(known, f.name) {
			return c.errorAt(at(f.field), "no profile named %q (profiles: %s)", f.name, strings.Join(known, ", "))
		}
	}
	for i, e := range c.Endpoints.Static {
		if _, err := endpoints.RoleOf(e.Labels, d.RoleLabel); err != nil {
			return c.errorAt([]any{"endpoints", "static", i, "labels", d.RoleLabel}, "%v", err)
		}
	}
	return nil
}

// PrefillProfileFor is the profile that picks the prefill server of a request whose handler
// chose profile: PrefillProfile, or profile itself when unset.
func (d *Disaggregation) PrefillProfileFor(profile string) string {
	return cmp.Or(d.PrefillProfile, profile)
}

// Splits reports whether requests of profile are disaggregated: DecodeProfile's when set, else
// every profile's but PrefillProfile's; never with SplitNever.
func (d *Disaggregation) Splits(profile string) bool {
	switch {
	case d == nil || d.Split == SplitNever:
		return false
	case d.DecodeProfile != "":
		return profile == d.DecodeProfile
	}
	return d.PrefillProfile == "" || profile != d.PrefillProfile
}
