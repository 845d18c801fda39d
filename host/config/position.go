package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Where in the file: a yaml.v3 error, or a validation message about a field, becomes
// "file:line: field: message", the line that of the field's node (or its closest ancestor).

var (
	lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)
	// yaml.v3 says "field X not found in type config.T".
	unknownFieldRE = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
)

// friendly names and field lists of the config types, for unknown-field messages.
var configTypes = map[string]reflect.Type{
	"config.Config":            reflect.TypeOf(Config{}),
	"config.PluginSpec":        reflect.TypeOf(PluginSpec{}),
	"config.Pipeline":          reflect.TypeOf(Pipeline{}),
	"config.StageRef":          reflect.TypeOf(StageRef{}),
	"config.Server":            reflect.TypeOf(Server{}),
	"config.Endpoints":         reflect.TypeOf(Endpoints{}),
	"config.EndpointSpec":      reflect.TypeOf(EndpointSpec{}),
	"config.Scrape":            reflect.TypeOf(Scrape{}),
	"config.MetricNames":       reflect.TypeOf(MetricNames{}),
	"config.Objective":         reflect.TypeOf(Objective{}),
	"config.Kubernetes":        reflect.TypeOf(Kubernetes{}),
	"config.Profile":           reflect.TypeOf(Profile{}),
	"config.ProfileHandler":    reflect.TypeOf(ProfileHandler{}),
	"config.Arm":               reflect.TypeOf(Arm{}),
	"config.ProfileExperiment": reflect.TypeOf(ProfileExperiment{}),
	"config.ProfileArm":        reflect.TypeOf(ProfileArm{}),
}

var friendlyNames = map[string]string{
	"config.Config": "the top level", "config.PluginSpec": "a plugin entry",
	"config.Pipeline": "pipeline", "config.StageRef": "a stage reference", "config.Arm": "an arm",
	"config.Server": "server", "config.Endpoints": "endpoints", "config.EndpointSpec": "an endpoint entry",
	"config.Scrape": "scrape", "config.MetricNames": "scrape.metrics", "config.Objective": "an objective",
	"config.Kubernetes": "endpoints.kubernetes", "config.Profile": "a profile", "config.ProfileHandler": "profileHandler",
	"config.ProfileExperiment": "profileHandler.experiment", "config.ProfileArm": "a profile arm",
}

// yamlError rewrites a yaml.v3 error as "file:line: message" lines.
func (c *Config) yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s:%s: %s", c.file, m[1], m[2])
		}
		return fmt.Errorf("%s: %s", c.file, msg)
	}
	lines := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		m := lineRE.FindStringSubmatch(e)
		if m == nil {
			lines = append(lines, fmt.Sprintf("%s: %s", c.file, e))
			continue
		}
		msg := m[2]
		if f := unknownFieldRE.FindStringSubmatch(msg); f != nil {
			msg = fmt.Sprintf("unknown field %q in %s (known: %s)", f[1], friendlyNames[f[2]], knownFields(configTypes[f[2]]))
		} else if line, _ := strconv.Atoi(m[1]); c.fieldAt(line) != "" {
			msg = c.fieldAt(line) + ": " + msg
		}
		lines = append(lines, fmt.Sprintf("%s:%s: %s", c.file, m[1], msg))
	}
	return errors.New(strings.Join(lines, "\n"))
}

func knownFields(t reflect.Type) string {
	if t == nil {
		return "?"
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("yaml"); tag != "" && tag != "-" {
			names = append(names, strings.Split(tag, ",")[0])
		}
	}
	return strings.Join(names, ", ")
}

// errorAt returns "file:line: field: message" for the node at path (keys and sequence indices),
// using the closest existing ancestor's line when the field itself is absent.
func (c *Config) errorAt(path []any, format string, args ...any) error {
	if c.edited != "" {
		return fmt.Errorf("%s: %s: %s", c.edited, fieldPath(path), fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%s:%d: %s: %s", c.file, c.line(path), fieldPath(path), fmt.Sprintf(format, args...))
}

func fieldPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch v := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(v) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		}
	}
	return b.String()
}

func (c *Config) line(path []any) int {
	n := c.root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		var next *yaml.Node
		switch v := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == v {
						next = n.Content[i+1]
						line = n.Content[i].Line
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && v < len(n.Content) {
				next = n.Content[v]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// fieldAt returns the path (e.g. "pipeline.maxBatch") of the last mapping value that starts on
// line, or "" when none does.
func (c *Config) fieldAt(line int) string {
	var found []any
	var walk func(n *yaml.Node, path []any)
	walk = func(n *yaml.Node, path []any) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, ch := range n.Content {
				walk(ch, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := append(append([]any{}, path...), n.Content[i].Value)
				if n.Content[i+1].Line == line {
					found = p
				}
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, ch := range n.Content {
				walk(ch, append(append([]any{}, path...), i))
			}
		}
	}
	walk(c.root, nil)
	return fieldPath(found)
}
