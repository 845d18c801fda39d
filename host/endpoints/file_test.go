package endpoints

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, "endpoints.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFile(t *testing.T) {
	eps, err := LoadFile(writeFile(t, t.TempDir(), `
endpoints:
  - id: vllm-0
    address: 127.0.0.1:8000
    labels: {accelerator: h100}
  - address: http://127.0.0.1:8001
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Endpoint{
		{ID: "vllm-0", Address: "127.0.0.1:8000", Labels: map[string]string{"accelerator": "h100"}},
		{ID: "http://127.0.0.1:8001", Address: "http://127.0.0.1:8001"}, // the id defaults to the address
	}
	if !reflect.DeepEqual(eps, want) {
		t.Errorf("LoadFile = %+v\nwant       %+v", eps, want)
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string // after "<file>:"
	}{{
		name: "unknown field",
		content: `endpoints:
  - id: a
    address: 127.0.0.1:8000
    weight: 2
`,
		want: `4: unknown field "weight" in an endpoint entry (known: id, address, labels, kvEvents, kvEventsReplay)`,
	}, {
		name:    "unknown top-level field",
		content: "endpoint:\n  - address: 127.0.0.1:8000\n",
		want:    `1: unknown field "endpoint" in the top level (known: endpoints)`,
	}, {
		name: "duplicate id",
		content: `endpoints:
  - id: a
    address: 127.0.0.1:8000
  - id: b
    address: 127.0.0.1:8001
  - id: a
    address: 127.0.0.1:8002
`,
		want: `6: endpoints[2].id: "a" is also the id of endpoint 0 (line 2)`,
	}, {
		name: "duplicate id by default",
		content: `endpoints:
  - address: 127.0.0.1:8000
  - id: 127.0.0.1:8000
    address: 127.0.0.1:8001
`,
		want: `3: endpoints[1].id: "127.0.0.1:8000" is also the id of endpoint 0`,
	}, {
		name: "empty address",
		content: `endpoints:
  - id: a
    address: 127.0.0.1:8000
  - id: b
    address: ""
`,
		want: `5: endpoints[1].address: address is required`,
	}, {
		name: "missing address",
		content: `endpoints:
  - id: a
    labels: {x: y}
`,
		want: `2: endpoints[0].address: address is required`,
	}, {
		name:    "bad address",
		content: "endpoints:\n  - {id: a, address: \"ftp://x:21\"}\n",
		want:    `2: endpoints[0].address: address "ftp://x:21" has scheme "ftp"; accepted: http, https`,
	}, {
		name:    "wrong type",
		content: "endpoints:\n  - id: a\n    address: 127.0.0.1:1\n    labels: [a, b]\n",
		want:    `4: cannot unmarshal !!seq into map[string]string`,
	}, {
		name:    "syntax",
		content: "endpoints:\n\t- id: a\n",
		want:    `2: found character that cannot start any token`,
	}, {
		name:    "empty file",
		content: "",
		want:    ` the file is empty`,
	}, {
		name:    "no endpoints",
		content: "endpoints: []\n",
		want:    `1: endpoints: lists no endpoint`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), tt.content)
			_, err := LoadFile(p)
			if err == nil || !strings.HasPrefix(err.Error(), p+":") || !strings.Contains(err.Error(), p+":"+tt.want) {
				t.Errorf("error = %v\nwant     %s:%s…", err, p, tt.want)
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("error = %v, want one naming the file", err)
	}
}
