package bench

// What a live bench replays and runs: the workload every run replays, and the runs that --configs
// and --baselines name.

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/workload"
)

// liveWorkload generates the workload every run replays, as bench routing does from the same
// flags, then applies the speedup and cuts it at MaxDuration.
func liveWorkload(o LiveOptions) (*workload.Workload, []workload.Class, error) {
	var classes []workload.Class
	for _, s := range o.Classes {
		c, err := workload.ParseClass(s)
		if err != nil {
			return nil, nil, fmt.Errorf("--class: %w", err)
		}
		classes = append(classes, c)
	}
	w, err := workload.Scenario(o.Scenario, workload.Params{Servers: o.Servers, RatePerServer: o.Rate,
		Requests: o.Requests, Seed: o.Seed, TracePath: o.Trace, Classes: classes})
	if err != nil {
		return nil, nil, err
	}
	n := len(w.Requests)
	for i := range w.Requests {
		r := &w.Requests[i]
		r.Arrival = time.Duration(float64(r.Arrival) / o.Speedup)
		if r.Arrival >= o.MaxDuration {
			n = min(n, i)
		}
	}
	w.Requests = w.Requests[:n]
	w.Rate *= o.Speedup
	if n == 0 {
		return nil, nil, fmt.Errorf("--max-duration %v: no arrival before it", o.MaxDuration)
	}
	return w, classes, nil
}

// liveRuns reads --configs and --baselines into the runs, in that order. Each config is loaded
// (a config error fails the bench before any run) to see whether it declares the objectives the
// workload's requests would send: one per class, by the class's name (then each request sends its
// class), or interactive and batch; when it does not, they are sent without one, as to a router
// that ignores objectives.
func liveRuns(o LiveOptions, w *workload.Workload) ([]liveRunSpec, error) {
	var specs []liveRunSpec
	for _, path := range splitList(o.Configs) {
		if o.Binary == "" {
			return nil, fmt.Errorf("--configs: the foresight binary to run them is not known")
		}
		cfg, err := config.Load(path)
		if err != nil {
			return nil, fmt.Errorf("--configs: %w", err)
		}
		s := liveRunSpec{name: filepath.Base(path), config: path, objectives: true, classObjectives: true}
		for i := range w.Requests {
			r := &w.Requests[i]
			if _, ok := cfg.Priority(r.Class); !ok || r.Class == "" {
				s.classObjectives = false
			}
			if _, ok := cfg.Priority(loadgen.Objective(r.Priority)); !ok {
				s.objectives = false
			}
		}
		s.objectives = s.objectives || s.classObjectives
		specs = append(specs, s)
	}
	for _, b := range splitList(o.Baselines) {
		switch b {
		case BaselineRoundRobin, BaselineLeastOutstanding:
			specs = append(specs, liveRunSpec{name: "client:" + b, baseline: b})
		case "none":
		default:
			return nil, fmt.Errorf("--baselines %q: want %s, %s or none", b, BaselineRoundRobin, BaselineLeastOutstanding)
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("--configs and --baselines: nothing to run")
	}
	return specs, nil
}

// splitList splits a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
