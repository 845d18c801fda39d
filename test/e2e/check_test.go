package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCheckListsEveryPluginOfEveryExample(t *testing.T) {
	examples, _ := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if len(examples) < 4 {
		t.Fatalf("found %d example configs, want at least 4", len(examples))
	}
	for _, f := range examples {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, stderr, code := foresight(t, "check", "--config", f)
			if code != 0 {
				t.Fatalf("exit %d, stderr: %s", code, stderr)
			}
			data, _ := os.ReadFile(f)
			names := regexp.MustCompile(`(?m)^  - name: (\S+)`).FindAllStringSubmatch(string(data), -1)
			rows := strings.Split(strings.TrimSpace(out), "\n")
			if len(rows) != len(names)+1 {
				t.Fatalf("got %d rows for %d plugins:\n%s", len(rows)-1, len(names), out)
			}
			for i, n := range names {
				if !strings.HasPrefix(rows[i+1], n[1]+" ") {
					t.Errorf("row %d = %q, want plugin %q", i+1, rows[i+1], n[1])
				}
				path := regexp.MustCompile(`(?m)^  - name: ` + regexp.QuoteMeta(n[1]) + `\n(?:    .*\n)*?    path: \.\./bin/plugins/(\S+)`).FindStringSubmatch(string(data))
				if path == nil {
					continue // a built-in stage
				}
				stage := strings.SplitN(path[1], "/", 2)[0] // bin/plugins/<name>, or bin/plugins/<name>/main.js
				version, err := os.ReadFile(filepath.Join("..", "..", "plugins", stage, "VERSION"))
				if err != nil {
					t.Fatal(err)
				}
				v := strings.TrimSpace(string(version))
				if !regexp.MustCompile(`\s` + regexp.QuoteMeta(v) + `\s+1\s+\d+\s`).MatchString(rows[i+1]) {
					t.Errorf("row %q should show version %s (plugins/%s/VERSION), protocol 1 and a pid", rows[i+1], v, stage)
				}
			}
		})
	}
}

func TestCheckRejectsBadConfigsWithOneLine(t *testing.T) {
	sum := sha256.New()
	data, err := os.ReadFile(pluginBin("picker"))
	if err != nil {
		t.Fatal(err)
	}
	sum.Write(data)
	goodSum := hex.EncodeToString(sum.Sum(nil))
	badSum := strings.Repeat("ab", 32)
	picker := func(extra string) string {
		return "plugins:\n  - name: picker\n    type: weighted-random-picker\n    path: ../bin/plugins/picker\n" + extra +
			"pipeline:\n  picker:\n    pluginRef: picker\n"
	}
	pickerVersion, err := os.ReadFile(filepath.Join(repo, "plugins", "picker", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		yaml string
		want []string // all must appear in the one line
	}{
		{"unknown field", picker("    paramters: {}\n"), []string{"bad.yaml:5", `unknown field "paramters"`}},
		{"missing binary", strings.Replace(picker(""), "plugins/picker", "plugins/nope", 1), []string{"bad.yaml:4", `plugin "picker"`, "no such file"}},
		{"wrong type", strings.Replace(picker(""), "weighted-random-picker", "latency-scorer", 1), []string{`plugin "picker"`, `reports type "weighted-random-picker"`, `declares "latency-scorer"`}},
		{"wrong sha256", picker("    sha256: " + badSum + "\n"), []string{`plugin "picker"`, "its SHA-256 is not the declared sha256 " + badSum}},
		{"version constraint", picker("    version: \">=2.0.0\"\n"), []string{`plugin "picker"`, "version " + strings.TrimSpace(string(pickerVersion)) + ` does not satisfy ">=2.0.0"`}},
		{"bad parameter", picker("    parameters:\n      strategy: fastest\n"), []string{`plugin "picker"`, "configuring", "strategy"}},
		{"wrong stage", "plugins:\n  - name: picker\n    type: weighted-random-picker\n    path: ../bin/plugins/picker\npipeline:\n  scorers:\n    - pluginRef: picker\n",
			[]string{`plugin "picker"`, "serves the picker stage but the pipeline uses it as a scorer"}},
		{"protocol 2", "plugins:\n  - name: future\n    type: prefix-cache-affinity-filter\n    path: ../bin/protocol2\npipeline:\n  filters:\n    - pluginRef: future\n",
			[]string{`plugin "future"`, "incompatible API version", "Plugin version: 2", "Client versions: [1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := writeConfig(t, "bad.yaml", tt.yaml)
			out, stderr, code := foresight(t, "check", "--config", f)
			if code == 0 {
				t.Fatalf("exit 0, want non-zero; stdout:\n%s", out)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 {
				t.Fatalf("stderr has %d lines, want 1:\n%s", len(lines), stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("stderr %q does not contain %q", lines[0], w)
				}
			}
		})
	}
	t.Run("right sha256", func(t *testing.T) {
		f := writeConfig(t, "good.yaml", picker("    sha256: "+goodSum+"\n"))
		if _, stderr, code := foresight(t, "check", "--config", f); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}

// TestPluginLogsReachTheHostLog checks the whole logging path: a plugin's zerolog line in
// go-plugin's stderr format is parsed by the host and re-logged with the plugin's fields.
func TestPluginLogsReachTheHostLog(t *testing.T) {
	_, stderr, code := foresight(t, "check", "--log-level", "info", "--config", filepath.Join(root, "examples", "pipeline.yaml"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	version := `"version":"` + pluginVersion(t, "scorer") + `"`
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, `"message":"plugin serving"`) && strings.Contains(line, `"plugin":"latency-scorer"`) &&
			strings.Contains(line, `"type":"latency-scorer"`) && strings.Contains(line, version) {
			return
		}
	}
	t.Errorf("no host log line relays the latency-scorer's \"plugin serving\" line; stderr:\n%s", stderr)
}
