package chaos

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
)

// faultConfig writes a config whose plugin binaries are empty executables (enough for the
// config's validation) and returns its file.
func faultConfig(t *testing.T, scorerType string) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range []string{"scorer", "picker"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	yml := `plugins:
  - name: picker
    type: weighted-random-picker
    path: ./picker
  - name: latency-scorer
    type: ` + scorerType + `
    path: ./scorer
    version: ">=1.0.0, <2.0.0"
    timeout: 30ms
    parameters:
      ttftWeight: 0.5
pipeline:
  scorers:
    - pluginRef: latency-scorer
      weight: 2
  picker:
    pluginRef: picker
`
	file := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestFaultTargetsAndSwapBody(t *testing.T) {
	cfg, err := config.Load(faultConfig(t, "latency-scorer"))
	if err != nil {
		t.Fatal(err)
	}
	spec, target, err := Targets(cfg, "pipeline.yaml", "--swaps", "--kills")
	if err != nil || spec.Name != "latency-scorer" || target != "latency-scorer" {
		t.Fatalf("spec %+v, target %q, err %v", spec, target, err)
	}
	body, err := swapBody(spec, "most")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type, Path, Version, Timeout, SHA256 string
		Parameters                           map[string]any
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != "latency-scorer" || got.Path != "./scorer" || got.Version != ">=1.0.0, <2.0.0" || got.Timeout != "30ms" ||
		got.Parameters["headroomSelectionStrategy"] != "most" || got.Parameters["ttftWeight"] != 0.5 {
		t.Errorf("swap body %s", body)
	}
	// A swap must pin its binary: the config's scorer is "#!/bin/sh\n", unpinned there.
	if sum := sha256.Sum256([]byte("#!/bin/sh\n")); got.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("swap body %s: want the scorer pinned by its sha256", body)
	}
	if _, ok := spec.Parameters["headroomSelectionStrategy"]; ok {
		t.Error("swapBody modified the config's parameters")
	}

	other, err := config.Load(faultConfig(t, "other-scorer"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Targets(other, "mine.yaml", "--swaps", "--kills"); err == nil || !strings.Contains(err.Error(), "other-scorer") ||
		!strings.HasPrefix(err.Error(), "mine.yaml: ") {
		t.Errorf("swaps on a non-latency scorer: %v", err)
	}
	if _, target, err := Targets(other, "mine.yaml", "", "--kills"); err != nil || target != "latency-scorer" {
		t.Errorf("no swaps: target %q, err %v", target, err)
	}

	// Built-in plugins only: nothing to kill, but a reload can still be broken.
	builtins, err := config.Parse(filepath.Join(t.TempDir(), "builtins.yaml"), []byte(`plugins:
  - {name: least-inflight, type: queue-scorer}
  - {name: max-score, type: max-score-picker}
pipeline:
  scorers: [{pluginRef: least-inflight}]
  picker: {pluginRef: max-score}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Targets(builtins, "b.yaml", "", "--kills"); err == nil || !strings.Contains(err.Error(), "--kills 0") {
		t.Errorf("kills without plugin processes: %v", err)
	}
	if _, target, err := Targets(builtins, "b.yaml", "", ""); err != nil || target != "least-inflight" {
		t.Errorf("built-ins only: target %q, err %v", target, err)
	}
}

func TestBadConfigs(t *testing.T) {
	file := faultConfig(t, "latency-scorer")
	valid, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range badConfigKinds {
		data, err := badConfig(valid, "latency-scorer", kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		cfg, perr := config.Parse(file, data)
		switch kind {
		case "broken-yaml", "missing-binary":
			if perr == nil {
				t.Errorf("%s: the config is valid:\n%s", kind, data)
			}
		case "unknown-parameter":
			// Valid for the config; the plugin's Configure is what rejects it.
			if perr != nil {
				t.Fatalf("%s: %v", kind, perr)
			}
			p := cfg.Plugin("latency-scorer")
			if p.Parameters["faultbenchNoSuchParameter"] != 1 || p.Parameters["ttftWeight"] != 0.5 || p.Path != "./scorer" {
				t.Errorf("%s: scorer %+v", kind, p)
			}
		}
	}
	if data, _ := badConfig(valid, "latency-scorer", "missing-binary"); !strings.Contains(string(data), "faultbench-no-such-plugin") {
		t.Errorf("missing-binary:\n%s", data)
	}
	if _, err := badConfig(valid, "nobody", "unknown-parameter"); err == nil {
		t.Error("a plugin the config does not declare was broken")
	}
	// The picker has no parameters: they are added.
	data, err := badConfig(valid, "picker", "unknown-parameter")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := config.Parse(file, data); err != nil || cfg.Plugin("picker").Parameters["faultbenchNoSuchParameter"] != 1 {
		t.Errorf("picker: %v\n%s", err, data)
	}
}
