// Package e2e tests the host with the real plugin binaries, built once for the whole package.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/internal/buildbin"
)

// The layout TestMain builds in a temp dir, mirroring the repository's so the example configs'
// relative plugin paths resolve: root/bin/foresight, root/bin/plugins/<stage>, root/examples/, and
// root/plugins, a link to the repository's plugins/.
var (
	root    string
	repo    string
	hostBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if repo, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if root, err = os.MkdirTemp("", "foresight-e2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	if err := buildAll(); err != nil {
		fmt.Fprintln(os.Stderr, "building binaries:", err)
		return 1
	}
	return m.Run()
}

func buildAll() error {
	hostBin = filepath.Join(root, "bin", "foresight")
	if err := buildbin.Host(repo, hostBin); err != nil {
		return err
	}
	// The test's own plugins, in one build that links them in parallel.
	testPlugins := []string{"-o", filepath.Join(root, "bin") + string(filepath.Separator)}
	for _, name := range []string{"protocol2", "stall", "picky", "oldpicker"} {
		testPlugins = append(testPlugins, "./test/e2e/testdata/"+name)
	}
	if err := buildbin.Go(repo, testPlugins...); err != nil {
		return err
	}
	if err := buildbin.PluginsInto(repo, filepath.Join(root, "bin", "plugins")); err != nil {
		return err
	}
	if err := buildTypeScript(); err != nil {
		return err
	}
	// Plugins in other languages run from their sources (a Python script finds its kit and the
	// generated code beside it): the examples reach them as ../plugins/….
	if err := os.Symlink(filepath.Join(repo, "plugins"), filepath.Join(root, "plugins")); err != nil {
		return err
	}
	examples, err := filepath.Glob(filepath.Join(repo, "examples", "*.yaml"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "examples"), 0o755); err != nil {
		return err
	}
	for _, f := range examples {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		// A generous deadline: on a loaded 2-core CI machine a first call can take several ms, and
		// these tests check decisions, not latency (the bench does that).
		// A config of scheduling profiles gets it in every profile's pipeline ("- name: …" items
		// at the left margin, their "  pipeline:" two spaces in).
		switch {
		case bytes.Contains(data, []byte("\nprofiles:\n")) && bytes.Contains(data, []byte("\n  pipeline:\n")):
			data = bytes.ReplaceAll(data, []byte("\n  pipeline:\n"), []byte("\n  pipeline:\n    stageTimeout: 5s\n"))
		case bytes.Contains(data, []byte("\npipeline:\n")):
			data = bytes.Replace(data, []byte("\npipeline:\n"), []byte("\npipeline:\n  stageTimeout: 5s\n"), 1)
		default:
			return fmt.Errorf("%s has no top-level pipeline: line (nor profiles' pipeline: lines) to give a deadline", f)
		}
		if err := os.WriteFile(filepath.Join(root, "examples", filepath.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	for _, dir := range []string{"cycles", "llumnix-profiles"} {
		if err := os.CopyFS(filepath.Join(root, "examples", dir), os.DirFS(filepath.Join(repo, "examples", dir))); err != nil {
			return err
		}
	}
	return nil
}

// buildTypeScript compiles the TypeScript example filter into root/bin/plugins/ts-filter, installing
// the Node packages from their lockfiles first where they are missing (make test installs them).
func buildTypeScript() error {
	sdk, filter := filepath.Join(repo, "plugins", "sdk", "typescript"), filepath.Join(repo, "plugins", "ts-filter")
	var steps [][]string
	for _, dir := range []string{sdk, filter} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
			steps = append(steps, []string{dir, "npm", "ci", "--silent", "--no-audit", "--no-fund"})
		}
	}
	steps = append(steps,
		[]string{sdk, "npm", "run", "--silent", "build"},
		[]string{filter, "npx", "tsc", "-p", "."},
		[]string{filter, "node", filepath.Join(sdk, "scripts", "assemble.mjs"), "--plugin", ".",
			"--out", filepath.Join(root, "bin", "plugins", "ts-filter"), "--entry", "main.js"})
	for _, s := range steps {
		cmd := exec.Command(s[1], s[2:]...)
		cmd.Dir = s[0]
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s in %s: %v\n%s", strings.Join(s[1:], " "), s[0], err, out)
		}
	}
	return nil
}

func pluginBin(stage string) string { return filepath.Join(root, "bin", "plugins", stage) }

// pluginVersion returns the version in plugins/<dir>/VERSION, the one the plugin reports.
func pluginVersion(t *testing.T, dir string) string {
	t.Helper()
	v, err := os.ReadFile(filepath.Join(repo, "plugins", dir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}

// foresight runs the host binary and returns stdout, stderr and the exit code.
func foresight(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(hostBin, args...)
	cmd.Dir = root
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running foresight %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// writeConfig writes a config into root/examples (so ../bin paths resolve) and returns its path.
func writeConfig(t *testing.T, name, yaml string) string {
	t.Helper()
	path := filepath.Join(root, "examples", name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return path
}
