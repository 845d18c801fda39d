package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// The plugin directories are where plugin binaries may come from. server.pluginDirs names them;
// without it they are the directories of the binaries the config file itself declares (for
// examples/*.yaml, bin/plugins and, for the Python example, plugins/python-scorer; for the Helm
// chart, /opt/foresight/bin/plugins). The file is the operator's own word, so by default it binds
// only PUT /admin/stages: a swap cannot launch what the file could not have named from where its
// binaries are. A plugin's path is made absolute and its symlinks resolved before it is compared,
// so "../" and links cannot lead out; and the path itself must lie inside, so a swap cannot launch
// an interpreter (/bin/sh with "args": ["-c", …]) from elsewhere.

// PluginDirs returns the plugin directories, absolute with their symlinks resolved: the config
// file's server.pluginDirs, else the directories of the binaries it declares. A copy WithStage
// made keeps those of the file it was made from.
func (c *Config) PluginDirs() []string { return slices.Clone(c.pluginDirs) }

// resolvePluginDirs sets c.pluginDirs from the file (Parse calls it before validating).
func (c *Config) resolvePluginDirs() error {
	c.pluginDirs = nil
	if len(c.Server.PluginDirs) > 0 {
		for i, d := range c.Server.PluginDirs {
			real, err := realPath(sdk.ResolvePathIn(c.Dir(), d))
			if err != nil {
				return c.errorAt([]any{"server", "pluginDirs", i}, "%v", err)
			}
			if st, err := os.Stat(real); err != nil || !st.IsDir() {
				return c.errorAt([]any{"server", "pluginDirs", i}, "%s is not a directory", real)
			}
			c.pluginDirs = append(c.pluginDirs, real)
		}
		return nil
	}
	for i := range c.Plugins {
		p := &c.Plugins[i]
		if p.Builtin() {
			continue
		}
		// A binary that does not resolve is validatePlugin's to report.
		if real, err := realPath(c.ResolvePath(p)); err == nil && !slices.Contains(c.pluginDirs, filepath.Dir(real)) {
			c.pluginDirs = append(c.pluginDirs, filepath.Dir(real))
		}
	}
	return nil
}

// realPath returns path made absolute and cleaned, with every symlink resolved.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// checkPluginDir refuses p's binary when, symlinks resolved, it lies outside every plugin
// directory.
func (c *Config) checkPluginDir(p *PluginSpec) error {
	path := c.ResolvePath(p)
	real, err := realPath(path)
	if err != nil {
		return fmt.Errorf("plugin %q: binary %s: %w", p.Name, path, err)
	}
	for _, d := range c.pluginDirs {
		if rel, err := filepath.Rel(d, real); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil
		}
	}
	shown := p.Path // as declared, and where it leads
	if real != p.Path {
		shown += " (" + real + ")"
	}
	if len(c.pluginDirs) == 0 {
		return fmt.Errorf("plugin %q: %s: no plugin directory is configured (the config file declares no plugin binary): list the allowed ones in server.pluginDirs",
			p.Name, shown)
	}
	return fmt.Errorf("plugin %q: %s is outside the plugin directories %s: a plugin binary must lie in one (server.pluginDirs)",
		p.Name, shown, strings.Join(c.pluginDirs, ", "))
}

// validatePluginDirs holds every declared binary to server.pluginDirs, when the file sets it.
func (c *Config) validatePluginDirs() error {
	if len(c.Server.PluginDirs) == 0 {
		return nil
	}
	for i := range c.Plugins {
		if p := &c.Plugins[i]; !p.Builtin() {
			if err := c.checkPluginDir(p); err != nil {
				return c.errorAt([]any{"plugins", i, "path"}, "%v", err)
			}
		}
	}
	return nil
}

// loaderEnv lists environment variables that make a process load code other than its binary's:
// the dynamic loader's and the interpreters' (a Python or Node plugin runs through one). A swap
// may not set them; the config file may.
var loaderEnv = []string{"BASH_ENV", "ENV", "GCONV_PATH", "NODE_OPTIONS", "NODE_PATH", "PERL5LIB", "PERL5OPT",
	"PERLLIB", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONUSERBASE", "RUBYLIB", "RUBYOPT"}

// checkSwap holds the plugin a swap (WithStage) launches to the admin API's rules, before
// anything runs: its binary inside the plugin directories, pinned by sha256 unless
// server.allowUnpinnedSwaps, and none of the loader's or an interpreter's variables in its env.
func (c *Config) checkSwap(origin string, p *PluginSpec) error {
	if p.Builtin() {
		return nil
	}
	if err := c.checkPluginDir(p); err != nil {
		return fmt.Errorf("%s: %w", origin, err)
	}
	if p.SHA256 == "" && !c.Server.AllowUnpinnedSwaps {
		return fmt.Errorf("%s: plugin %q: a swap must pin its binary: add \"sha256\" with the SHA-256 of %s (sha256sum prints it), "+
			"or set server.allowUnpinnedSwaps", origin, p.Name, c.ResolvePath(p))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		if strings.HasPrefix(k, "LD_") || strings.HasPrefix(k, "DYLD_") || slices.Contains(loaderEnv, k) {
			return fmt.Errorf("%s: plugin %q: env %s would make the process load other code; a swap may not set it (the config file may)",
				origin, p.Name, k)
		}
	}
	return nil
}
