package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Fleet returns the configurations of n servers described by spec: a comma-separated list of
// PRESET or PRESET@FACTOR, where FACTOR multiplies the preset's step times (Config.Speed: 2 is a
// server twice as slow, 0.5 twice as fast). Server i takes item i mod the number of items, so
// "llama-3.1-8b-h100-tp2,llama-3.1-8b-h100-tp2@2" over 4 servers gives two fast and two slow ones
// in turn, and the families may be mixed. The configurations have no noise and seed 0, like
// Preset's; every bad item is reported at once.
func Fleet(spec string, n int) ([]Config, error) {
	if n < 1 {
		return nil, fmt.Errorf("a fleet needs at least 1 server, got %d", n)
	}
	var items []Config
	var errs []string
	for _, item := range strings.Split(spec, ",") {
		c, err := fleetItem(strings.TrimSpace(item))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		items = append(items, c)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("engine fleet %q: %s", spec, strings.Join(errs, "; "))
	}
	out := make([]Config, n)
	for i := range out {
		out[i] = items[i%len(items)]
	}
	return out, nil
}

// fleetItem parses one PRESET[@FACTOR] of a fleet spec.
func fleetItem(item string) (Config, error) {
	name, factor, slowed := strings.Cut(item, "@")
	if name == "" {
		return Config{}, fmt.Errorf("empty preset name in %q", item)
	}
	c, err := Preset(name)
	if err != nil {
		return Config{}, err
	}
	if slowed {
		f, err := strconv.ParseFloat(factor, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return Config{}, fmt.Errorf("step-time factor of %q must be a finite number > 0 (2 = twice as slow), got %q", name, factor)
		}
		c.Speed = f
	}
	return c, nil
}

// FleetUsage is the help text of a --preset flag that takes a fleet spec.
func FleetUsage() string {
	return "engine preset, or a mixed fleet: comma-separated PRESET[@FACTOR] taken by the servers in turn, " +
		"FACTOR multiplying step times (2 = twice as slow); presets: " + strings.Join(Presets(), ", ")
}
