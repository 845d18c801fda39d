package bench

import (
	"os"
	"strings"
	"time"

	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/profiler"
)

// The producer types the routing bench configures: the learned one trains inline and starts
// cold; the profile one, in the llumnix-slo strategy, gets profiles of the simulated fleet.
const (
	learnedProducer = "predicted-latency-producer"
	profileProducer = "profile-producer"
)

// profileRuns is how many runs each profile point takes (foresight profile's default).
const profileRuns = 10

// fleetProfiles measures the TTFT and TPOT profiles of the fleet's first server (its preset and
// speed, with the run's noise and seed, as `foresight profile` would) into a new temporary
// directory, and returns it; the caller removes it. Llumnix takes one profile for its instances,
// so on a mixed fleet the other servers are predicted as the first (the comparison is fair to the
// learned producer, which must discover the mix too).
func fleetProfiles(o RoutingOptions) (string, error) {
	cfgs, err := engine.Fleet(o.Preset, 1)
	if err != nil {
		return "", err
	}
	name, _, _ := strings.Cut(strings.Split(o.Preset, ",")[0], "@")
	p, err := profiler.Run(cfgs[0], strings.TrimSpace(name), profiler.Options{Runs: profileRuns, Noise: o.Noise, Seed: o.Seed})
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "foresight-bench-profiles-")
	if err != nil {
		return "", err
	}
	p.Metadata.Timestamp = time.Now().UTC().Format(time.RFC3339)
	if _, _, err := p.WriteDir(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
