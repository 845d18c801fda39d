package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/live"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// pythonYAML: the Python cost-aware scorer (or the Go latency scorer, for the swap) behind no
// producer; the test cycles carry predictions, so the scorer ranks by SLO, cost and TTFT.
const pythonYAML = `
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
`

// costCycle: four endpoints that all meet the SLO; vllm-2 is the cheapest (a100) and, among the
// a100s, the faster one.
func costCycle(seed uint64) *sdk.Cycle {
	c := testCycle(seed)
	labels := []string{"h100", "h100", "a100", "a100"}
	for i := range c.Endpoints {
		c.Endpoints[i].Labels = map[string]string{"accelerator": labels[i]}
		c.Endpoints[i].Prediction = sdk.Prediction{Valid: true, TTFTMs: 100 + 10*float64(i), TPOTMs: 20}
	}
	return c
}

// TestPythonScorer: the host launches the Python plugin like a binary (handshake, AutoMTLS,
// GetInfo, Configure), runs cycles through it, swaps it for the Go scorer and back on a live
// pipeline, and restarts it when it is killed.
func TestPythonScorer(t *testing.T) {
	cfg, err := config.Load(writeConfig(t, "python.yaml", pythonYAML))
	if err != nil {
		t.Fatal(err)
	}
	l, err := live.Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	info := described(t, l.Describe(), "cost")
	if info.Info.Type != "cost-aware-scorer" || info.Info.Version != "1.0.0" || info.PID == 0 || info.Protocol != 1 {
		t.Fatalf("the Python plugin as the host sees it: %+v", info)
	}
	for n := range 20 {
		tr := l.Run(context.Background(), costCycle(uint64(n)))
		if tr.Scorers[0].Fallback != "" || tr.Scorers[0].Plugin != "cost" || tr.OrderIDs()[0] != "vllm-2:8000" {
			t.Fatalf("cycle %d: scorer %s fell back %q, picked %v; want vllm-2 (the cheapest, then the fastest)",
				n, tr.Scorers[0].Plugin, tr.Scorers[0].Fallback, tr.OrderIDs())
		}
	}

	// Swap in the Go latency scorer (it prefers the fastest, vllm-0), then the Python one back.
	goScorer := config.PluginSpec{Name: "latency", Type: "latency-scorer", Path: filepath.Join("..", "bin", "plugins", "scorer")}
	if _, err := l.SwapStage(context.Background(), "scorers.0", goScorer, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if tr := l.Run(context.Background(), costCycle(99)); tr.Scorers[0].Plugin != "latency" || tr.Scorers[0].Fallback != "" {
		t.Fatalf("after the swap: scorer %s, fallback %q", tr.Scorers[0].Plugin, tr.Scorers[0].Fallback)
	}
	back := *cfg.Plugin("cost")
	res, err := l.SwapStage(context.Background(), "scorers.0", back, nil, "test")
	if err != nil || !slices.Equal(res.Started, []string{"cost"}) {
		t.Fatalf("swapping the Python scorer back: %+v, %v", res, err)
	}
	if tr := l.Run(context.Background(), costCycle(100)); tr.Scorers[0].Plugin != "cost" || tr.OrderIDs()[0] != "vllm-2:8000" {
		t.Fatalf("after swapping back: scorer %s picked %v", tr.Scorers[0].Plugin, tr.OrderIDs())
	}

	// A crash is seen and the process restarted, as for a Go plugin.
	pid := described(t, l.Describe(), "cost").PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Python scorer's restart", func() bool {
		p := described(t, l.Describe(), "cost")
		return p.Up && p.Restarts == 1 && p.PID != pid
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr := l.Run(context.Background(), costCycle(101))
		if tr.Scorers[0].Fallback == "" && tr.OrderIDs()[0] == "vllm-2:8000" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart the scorer still falls back: %q", tr.Scorers[0].Fallback)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
