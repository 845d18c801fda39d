package chaos

import (
	"fmt"
	"slices"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pluginhost"
)

// Targets returns the plugin spec of the swapped slot (when swaps are asked for it must be a
// latency-scorer) and the name of the plugin the bad reloads break: the swapped slot's, else the
// first plugin launched from a binary, else the first plugin. Kills need a plugin launched from a
// binary. swaps and kills name the flags that asked for swaps and kills ("--swaps 0" is how a
// user asks for none), "" when none are asked for; errors name them and file, the user's config.
// A swapped binary the config does not pin is pinned to its current checksum, as PUT
// /admin/stages requires.
func Targets(cfg *config.Config, file, swaps, kills string) (config.PluginSpec, string, error) {
	var spec config.PluginSpec
	ref, _, err := cfg.SlotRef(SwapSlot)
	if err == nil {
		if p := cfg.Plugin(ref.PluginRef); p != nil {
			spec = *p
		}
	}
	if swaps != "" && spec.Type != "latency-scorer" {
		if err != nil {
			return spec, "", fmt.Errorf("%s: %s needs slot %s: %w", file, swaps, SwapSlot, err)
		}
		return spec, "", fmt.Errorf("%s: %s alternates latency-scorer configurations in slot %s, which is served by a %q (use %s 0)",
			file, swaps, SwapSlot, spec.Type, swaps)
	}
	if swaps != "" && !spec.Builtin() && spec.SHA256 == "" {
		sum, err := pluginhost.Checksum(cfg.ResolvePath(&spec))
		if err != nil {
			return spec, "", fmt.Errorf("%s: pinning the swapped plugin %q: %w", file, spec.Name, err)
		}
		spec.SHA256 = sum
	}
	i := slices.IndexFunc(cfg.Plugins, func(p config.PluginSpec) bool { return !p.Builtin() })
	if kills != "" && i < 0 {
		return spec, "", fmt.Errorf("%s: no plugin is launched from a binary, so there is no process to kill (use %s 0)", file, kills)
	}
	switch {
	case spec.Name != "" && !spec.Builtin():
		return spec, spec.Name, nil
	case i >= 0:
		return spec, cfg.Plugins[i].Name, nil
	case spec.Name != "":
		return spec, spec.Name, nil
	case len(cfg.Plugins) > 0:
		return spec, cfg.Plugins[0].Name, nil
	}
	return spec, "", fmt.Errorf("%s: the config declares no plugin", file)
}
