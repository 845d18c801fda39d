package config_test

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
)

// pluginTree lays out conf/ (where config files go), plugins/ with an executable "scorer" and a
// link "sh" to /bin/sh, and other/ with an executable "evil"; it returns its root.
func pluginTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"conf", "plugins", "other"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"plugins/scorer", "other/evil"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/bin/sh", filepath.Join(root, "plugins", "sh")); err != nil {
		t.Fatal(err)
	}
	return root
}

// scorerConfig is a config declaring ../plugins/scorer in scorers.0, with server lines added.
func scorerConfig(server ...string) string {
	s := y("plugins:",
		"  - {name: scorer, type: latency-scorer, path: ../plugins/scorer}",
		"pipeline:",
		"  scorers: [{pluginRef: scorer}]")
	if len(server) > 0 {
		s += y(append([]string{"server:"}, server...)...)
	}
	return s
}

// TestSwapPluginRules: PUT /admin/stages' declaration (WithStage) may launch only a binary
// inside the plugin directories, symlinks and "../" resolved, pinned by sha256, and without the
// loader's variables; all of it is refused before anything runs.
func TestSwapPluginRules(t *testing.T) {
	root := pluginTree(t)
	file := filepath.Join(root, "conf", "c.yaml")
	pinned, err := config.Parse(file, []byte(scorerConfig()))
	if err != nil {
		t.Fatal(err)
	}
	unpinned, err := config.Parse(file, []byte(scorerConfig("  allowUnpinnedSwaps: true")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pinned.PluginDirs(), []string{filepath.Join(root, "plugins")}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("default plugin directories %v, want the declared binary's %v", got, want)
	}
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  *config.Config
		spec config.PluginSpec
		err  string // an excerpt; "" for accepted
	}{
		{"a pinned binary of the plugin directory", pinned, config.PluginSpec{Path: "../plugins/scorer", SHA256: hex64}, ""},
		{"a built-in", pinned, config.PluginSpec{Name: "q", Type: "queue-scorer"}, ""},
		{"unpinned", pinned, config.PluginSpec{Path: "../plugins/scorer"},
			`plugin "scorer": a swap must pin its binary: add "sha256" with the SHA-256 of ` + root + "/plugins/scorer (sha256sum prints it), or set server.allowUnpinnedSwaps"},
		{"unpinned, allowed", unpinned, config.PluginSpec{Path: "../plugins/scorer"}, ""},
		// The path itself must lie inside: /bin/sh does not, whatever args would make it run.
		{"a shell with a command", unpinned, config.PluginSpec{Path: "/bin/sh", Args: []string{"-c", "touch /tmp/owned"}, SHA256: hex64},
			`plugin "scorer": /bin/sh (` + sh + `) is outside the plugin directories ` + root + "/plugins: a plugin binary must lie in one (server.pluginDirs)"},
		{"climbing out with ../", unpinned, config.PluginSpec{Path: "../plugins/../other/evil"},
			"../plugins/../other/evil (" + root + "/other/evil) is outside the plugin directories"},
		{"a link out", unpinned, config.PluginSpec{Path: "../plugins/sh"}, "/plugins/sh ("},
		{"a missing binary", unpinned, config.PluginSpec{Path: "../plugins/nothing"}, "no such file or directory"},
		{"the loader's variable", pinned, config.PluginSpec{Path: "../plugins/scorer", SHA256: hex64, Env: map[string]string{"LD_PRELOAD": "/tmp/x.so"}},
			"env LD_PRELOAD would make the process load other code; a swap may not set it"},
		{"an interpreter's variable", pinned, config.PluginSpec{Path: "../plugins/scorer", SHA256: hex64, Env: map[string]string{"PYTHONPATH": "/tmp"}},
			"env PYTHONPATH would make the process load other code"},
		{"a harmless variable", pinned, config.PluginSpec{Path: "../plugins/scorer", SHA256: hex64, Env: map[string]string{"GOMAXPROCS": "2"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.Type = cmp.Or(spec.Type, "latency-scorer")
			_, err := tc.cfg.WithStage("", "scorers.0", spec, nil, "PUT /admin/stages/scorers.0")
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// TestPluginDirs: server.pluginDirs, when set, binds the config file's own plugins too, and must
// name directories; a config of built-ins alone gives swaps no directory to launch from.
func TestPluginDirs(t *testing.T) {
	root := pluginTree(t)
	file := filepath.Join(root, "conf", "c.yaml")
	tests := []struct {
		name, yaml string
		err        string // an excerpt; "" for accepted
	}{
		{"the declared binary's directory", scorerConfig("  pluginDirs: [../plugins]"), ""},
		{"absolute", scorerConfig("  pluginDirs: [" + root + "/other, " + root + "/plugins]"), ""},
		{"the binary outside", scorerConfig("  pluginDirs: [../other]"),
			"c.yaml:2: plugins[0].path: plugin \"scorer\": ../plugins/scorer (" + root + "/plugins/scorer) is outside the plugin directories " + root + "/other"},
		{"a directory that is not", scorerConfig("  pluginDirs: [../nowhere]"), "c.yaml:6: server.pluginDirs[0]: lstat " + root + "/nowhere: no such file"},
		{"a file", scorerConfig("  pluginDirs: [../plugins/scorer]"), "server.pluginDirs[0]: " + root + "/plugins/scorer is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(file, []byte(tc.yaml))
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v, want an error with %q", err, tc.err)
			}
		})
	}

	builtins, err := config.Parse(file, []byte(y("pipeline:", "  scorers: [{pluginRef: q}]", "plugins:", "  - {name: q, type: queue-scorer}")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = builtins.WithStage("", "scorers.0", config.PluginSpec{Type: "latency-scorer", Path: "../plugins/scorer", SHA256: hex64}, nil, "swap")
	if err == nil || !strings.Contains(err.Error(), "no plugin directory is configured (the config file declares no plugin binary): list the allowed ones in server.pluginDirs") {
		t.Errorf("a binary swap into a config of built-ins: %v", err)
	}
}
