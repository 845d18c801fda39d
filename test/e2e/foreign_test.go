package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/host/router"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// foreignCase is a stage written in another language, in a pipeline the test runs live.
type foreignCase struct {
	// dir is the plugin's folder under plugins/, whose VERSION file holds the version it reports.
	yaml, plugin, typ, slot, dir string
	cycle                        func(seed uint64) *sdk.Cycle
	// served reports whether the foreign plugin decided the cycle as it should (no fallback).
	served func(tr *pipeline.Trace) bool
	// goSpec is a Go plugin for the same slot, swapped in and out; goServed checks its cycles.
	goSpec   config.PluginSpec
	goServed func(tr *pipeline.Trace) bool
}

// exerciseForeign: the host launches the plugin like a Go binary (handshake, AutoMTLS, GetInfo,
// Configure), runs cycles through it, swaps the Go plugin in and the foreign one back on the live
// pipeline, and restarts it when it is killed.
func exerciseForeign(t *testing.T, fc foreignCase) {
	cfg, err := config.Load(writeConfig(t, fc.plugin+".yaml", fc.yaml))
	if err != nil {
		t.Fatal(err)
	}
	l, err := router.StartPipelines(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	info := described(t, l.Describe(), fc.plugin)
	if info.Info.Type != fc.typ || info.Info.Version != pluginVersion(t, fc.dir) || info.PID == 0 || info.Protocol != 1 {
		t.Fatalf("the plugin as the host sees it: %+v", info)
	}
	for n := range 20 {
		if tr := l.Run(context.Background(), fc.cycle(uint64(n))); !fc.served(tr) {
			t.Fatalf("cycle %d not served as expected: %s", n, traceJSON(tr))
		}
	}

	// A swap pins its binary.
	pin := func(spec config.PluginSpec) config.PluginSpec {
		sum, err := pluginhost.Checksum(cfg.ResolvePath(&spec))
		if err != nil {
			t.Fatal(err)
		}
		spec.SHA256 = sum
		return spec
	}
	if _, err := l.SwapStage(context.Background(), fc.slot, pin(fc.goSpec), nil, "test"); err != nil {
		t.Fatal(err)
	}
	if tr := l.Run(context.Background(), fc.cycle(99)); !fc.goServed(tr) {
		t.Fatalf("after swapping in %s: %s", fc.goSpec.Name, traceJSON(tr))
	}
	// Swapped back, the plugin is started again, or kept: the pool reuses its process when the
	// swapped-out generation has not yet drained and released it (pluginhost.Pool), which a loaded
	// machine makes likely. Either way it is the one serving, as the next cycle checks.
	res, err := l.SwapStage(context.Background(), fc.slot, pin(*cfg.Plugin(fc.plugin)), nil, "test")
	back := slices.Equal(res.Started, []string{fc.plugin}) || (len(res.Started) == 0 && slices.Contains(res.Kept, fc.plugin))
	if err != nil || !back {
		t.Fatalf("swapping %s back: %+v, %v", fc.plugin, res, err)
	}
	if tr := l.Run(context.Background(), fc.cycle(100)); !fc.served(tr) {
		t.Fatalf("after swapping back: %s", traceJSON(tr))
	}

	// A crash is seen and the process restarted, as for a Go plugin.
	pid := described(t, l.Describe(), fc.plugin).PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the restart", func() bool {
		p := described(t, l.Describe(), fc.plugin)
		return p.Up && p.Restarts == 1 && p.PID != pid
	})
	deadline := time.Now().Add(5 * time.Second)
	for tr := l.Run(context.Background(), fc.cycle(101)); !fc.served(tr); tr = l.Run(context.Background(), fc.cycle(101)) {
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: %s", traceJSON(tr))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func traceJSON(tr *pipeline.Trace) string {
	b, _ := tr.MarshalJSON()
	return string(b)
}

// labelled is testCycle with an accelerator and a pool label per endpoint, and predictions that
// all meet the SLO (vllm-0 the fastest).
func labelled(seed uint64) *sdk.Cycle {
	c := testCycle(seed)
	acc := []string{"h100", "h100", "a100", "a100"}
	pool := []string{"batch", "interactive", "batch", "interactive"}
	for i := range c.Endpoints {
		c.Endpoints[i].Labels = map[string]string{"accelerator": acc[i], "pool": pool[i]}
		c.Endpoints[i].Prediction = sdk.Prediction{Valid: true, TTFTMs: 100 + 10*float64(i), TPOTMs: 20}
	}
	return c
}

func first(tr *pipeline.Trace) string {
	if ids := tr.OrderIDs(); len(ids) > 0 {
		return ids[0]
	}
	return ""
}

func TestPythonScorer(t *testing.T) {
	exerciseForeign(t, foreignCase{
		yaml: `
plugins:
  - name: cost
    type: cost-aware-scorer
    path: ../plugins/python-scorer/main.py
    version: ">=1.0.0, <2.0.0"
    parameters: {acceleratorCosts: {h100: 4.0, a100: 2.2}}
  - name: pick
    type: max-score-picker
pipeline:
  scorers: [{pluginRef: cost}]
  picker: {pluginRef: pick}
  stageTimeout: 5s
server: {pluginDirs: [../bin/plugins, ../plugins]} # the Go scorer swapped in lies beside neither
`,
		plugin: "cost", typ: "cost-aware-scorer", slot: "scorers.0", dir: "python-scorer", cycle: labelled,
		// The a100s are cheaper; of them vllm-2 is the faster.
		served: func(tr *pipeline.Trace) bool {
			return tr.Scorers[0].Plugin == "cost" && tr.Scorers[0].Fallback == "" && first(tr) == "vllm-2:8000"
		},
		// The Go latency scorer (least headroom, no costs) prefers another endpoint.
		goSpec: config.PluginSpec{Name: "latency", Type: "latency-scorer", Path: filepath.Join("..", "bin", "plugins", "scorer")},
		goServed: func(tr *pipeline.Trace) bool {
			return tr.Scorers[0].Plugin == "latency" && tr.Scorers[0].Fallback == ""
		},
	})
}

func TestTypeScriptFilter(t *testing.T) {
	exerciseForeign(t, foreignCase{
		yaml: `
plugins:
  - name: pool
    type: label-selector-filter
    path: ../bin/plugins/ts-filter/main.js
    version: ">=1.0.0, <2.0.0"
    parameters: {match: {pool: interactive}}
pipeline:
  filters: [{pluginRef: pool}]
  stageTimeout: 5s
server: {pluginDirs: [../bin/plugins]} # the Go filter swapped in lies beside ts-filter/, not in it
`,
		plugin: "pool", typ: "label-selector-filter", slot: "filters.0", dir: "ts-filter", cycle: labelled,
		served: func(tr *pipeline.Trace) bool {
			f := tr.Filters[0]
			return f.Plugin == "pool" && f.Fallback == "" && slices.Equal(f.Kept, []int{1, 3})
		},
		goSpec: config.PluginSpec{Name: "affinity", Type: "prefix-cache-affinity-filter", Path: filepath.Join("..", "bin", "plugins", "affinity")},
		goServed: func(tr *pipeline.Trace) bool {
			return tr.Filters[0].Plugin == "affinity" && tr.Filters[0].Fallback == ""
		},
	})
}
