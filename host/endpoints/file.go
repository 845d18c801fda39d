package endpoints

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// fileList is the shape of an endpoint list file.
type fileList struct {
	Endpoints []fileEndpoint `yaml:"endpoints"`
}

type fileEndpoint struct {
	ID             string            `yaml:"id"`
	Address        string            `yaml:"address"`
	Labels         map[string]string `yaml:"labels"`
	KVEvents       string            `yaml:"kvEvents"`
	KVEventsReplay string            `yaml:"kvEventsReplay"`
}

// LoadFile reads an endpoint list file, YAML of the form
//
//	endpoints:
//	  - id: vllm-0
//	    address: 127.0.0.1:8000
//	    labels: {accelerator: h100}
//	    kvEvents: tcp://127.0.0.1:5557   # optional: the engine's KV-cache event publisher
//
// decoded strictly (an unknown field is an error). An entry without an id takes its address.
// A file listing no endpoint is an error, so that a file caught half-written never empties the
// fleet. Errors name the file, the line and the field.
func LoadFile(path string) ([]Endpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the endpoints file: %w", err)
	}
	return parseFile(path, data)
}

// parseFile decodes and validates data as if read from file.
func parseFile(file string, data []byte) ([]Endpoint, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(file, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var fl fileList
	if err := dec.Decode(&fl); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the file is empty; expected \"endpoints:\" and a list of {id, address, labels}", file)
		}
		return nil, yamlError(file, err)
	}
	at := func(i int, field, format string, args ...any) error {
		path := fmt.Sprintf("endpoints[%d].%s", i, field)
		return fmt.Errorf("%s:%d: %s: %s", file, lineOf(&root, i, field), path, fmt.Sprintf(format, args...))
	}
	if len(fl.Endpoints) == 0 {
		return nil, fmt.Errorf("%s:%d: endpoints: lists no endpoint", file, lineOf(&root, -1, ""))
	}
	eps := make([]Endpoint, len(fl.Endpoints))
	seen := make(map[string]int, len(fl.Endpoints))
	for i, fe := range fl.Endpoints {
		if err := ValidateAddress(fe.Address); err != nil {
			return nil, at(i, "address", "%v", err)
		}
		id := fe.ID
		id = cmp.Or(id, fe.Address)
		if j, dup := seen[id]; dup {
			return nil, at(i, "id", "%q is also the id of endpoint %d (line %d)", id, j, lineOf(&root, j, "id"))
		}
		seen[id] = i
		for _, f := range []struct{ name, addr string }{{"kvEvents", fe.KVEvents}, {"kvEventsReplay", fe.KVEventsReplay}} {
			if f.addr != "" {
				if err := ValidateKVEvents(f.addr); err != nil {
					return nil, at(i, f.name, "%v", err)
				}
			}
		}
		if fe.KVEventsReplay != "" && fe.KVEvents == "" {
			return nil, at(i, "kvEventsReplay", "a replay address needs the publisher's, kvEvents")
		}
		eps[i] = Endpoint{ID: id, Address: fe.Address, Labels: fe.Labels, KVEvents: fe.KVEvents, KVEventsReplay: fe.KVEventsReplay}
	}
	return eps, nil
}

// lineOf returns the line of field in entry i of the endpoints list (i < 0: of the list), or
// of the closest enclosing node that exists.
func lineOf(root *yaml.Node, i int, field string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	n = mapValue(n, "endpoints")
	if n == nil {
		return line
	}
	line = n.Line
	if i < 0 || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
		return line
	}
	n = n.Content[i]
	line = n.Line
	if v := mapValue(n, field); v != nil {
		line = v.Line
	}
	return line
}

// mapValue returns the value of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for k := 0; k+1 < len(n.Content); k += 2 {
		if n.Content[k].Value == key {
			return n.Content[k+1]
		}
	}
	return nil
}

var (
	lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)
	// yaml.v3 says "field X not found in type endpoints.T".
	unknownFieldRE = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
	knownFields    = map[string]string{
		"endpoints.fileList":     "the top level (known: endpoints)",
		"endpoints.fileEndpoint": "an endpoint entry (known: id, address, labels, kvEvents, kvEventsReplay)",
	}
)

// yamlError rewrites a yaml.v3 error as "file:line: message" lines.
func yamlError(file string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s:%s: %s", file, m[1], m[2])
		}
		return fmt.Errorf("%s: %s", file, msg)
	}
	lines := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		m := lineRE.FindStringSubmatch(e)
		if m == nil {
			lines = append(lines, fmt.Sprintf("%s: %s", file, e))
			continue
		}
		msg := m[2]
		if f := unknownFieldRE.FindStringSubmatch(msg); f != nil {
			msg = fmt.Sprintf("unknown field %q in %s", f[1], knownFields[f[2]])
		}
		lines = append(lines, fmt.Sprintf("%s:%s: %s", file, m[1], msg))
	}
	return errors.New(strings.Join(lines, "\n"))
}
