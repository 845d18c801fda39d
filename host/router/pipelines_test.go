package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// Built-in stages only, so the tests need no binaries.
const (
	queueYAML = `
plugins:
  - name: queue
    type: queue-scorer
  - name: pick
    type: max-score-picker
pipeline:
  scorers:
    - pluginRef: queue
  picker: {pluginRef: pick}
`
	kvYAML = `
plugins:
  - name: kv
    type: kv-cache-utilization-scorer
  - name: pick
    type: max-score-picker
pipeline:
  scorers:
    - pluginRef: kv
      weight: 2
  picker: {pluginRef: pick}
`
)

func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("live-test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func start(t *testing.T, yaml string) *Pipelines {
	t.Helper()
	l, err := StartPipelines(context.Background(), parse(t, yaml), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// cycle has endpoint 1 idle and endpoint 0 loaded, so either scorer picks endpoint 1.
func cycle(n int) *sdk.Cycle {
	return &sdk.Cycle{
		Request: sdk.Request{ID: fmt.Sprint("r", n)},
		Now:     time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		Endpoints: []sdk.Endpoint{
			{ID: "a", State: sdk.EndpointState{Waiting: 5, KVCacheUsage: 0.9}},
			{ID: "b", State: sdk.EndpointState{Waiting: 0, KVCacheUsage: 0.1}},
		},
	}
}

func TestReloadKeepsUnchangedPlugins(t *testing.T) {
	l := start(t, queueYAML)
	oldQueue := l.Plugins()[0]
	oldPick := l.Plugins()[1]
	res, err := l.Reload(context.Background(), parse(t, kvYAML))
	if err != nil {
		t.Fatal(err)
	}
	if res.Generation != 2 || !slices.Equal(res.Kept, []string{"pick"}) || !slices.Equal(res.Started, []string{"kv"}) ||
		!slices.Equal(res.Stopping, []string{"queue"}) {
		t.Errorf("result %+v, want generation 2 keeping pick, starting kv, stopping queue", res)
	}
	if l.Plugins()[1] != oldPick {
		t.Error("the unchanged picker was replaced, not kept")
	}
	d := l.Describe()
	if d.Generation != 2 || len(d.Slots) != 2 || d.Slots[0].Slot != "scorers.0" || d.Slots[0].Stage != "scorer" ||
		d.Slots[0].Plugin != "kv" || *d.Slots[0].Weight != 2 || d.Slots[0].Arms != nil {
		t.Errorf("description %+v", d)
	}
	waitFor(t, "the old scorer to stop", func() bool { return oldQueue.Client() == nil })
	if oldPick.Client() == nil {
		t.Error("the kept picker was stopped with the old pipeline")
	}
	if tr := l.Run(context.Background(), cycle(1)); picked(tr) != "b" {
		t.Errorf("picked %q, want b", picked(tr))
	}
}

func TestFailedReloadKeepsServing(t *testing.T) {
	l := start(t, queueYAML)
	bad := parse(t, `
plugins:
  - name: pick
    type: max-score-picker
  - name: nope
    type: no-such-scorer
pipeline:
  scorers:
    - pluginRef: nope
  picker: {pluginRef: pick}
`)
	if _, err := l.Reload(context.Background(), bad); err == nil {
		t.Fatal("Reload of a pipeline that cannot be built: want an error")
	}
	if g, _ := l.Generation(); g != 1 {
		t.Errorf("generation %d after a failed reload, want 1", g)
	}
	for _, pl := range l.Plugins() {
		if pl.Client() == nil {
			t.Errorf("plugin %s stopped by a failed reload", pl.Name())
		}
	}
	if tr := l.Run(context.Background(), cycle(1)); picked(tr) != "b" || tr.Scorers[0].Fallback != "" {
		t.Errorf("after a failed reload: picked %q, scorer fallback %q", picked(tr), tr.Scorers[0].Fallback)
	}
}

func TestSwapStage(t *testing.T) {
	l := start(t, queueYAML)
	w := 3.0
	res, err := l.SwapStage(context.Background(), "scorers.0", config.PluginSpec{Name: "kv", Type: "kv-cache-utilization-scorer"}, &w, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Started, []string{"kv"}) || !slices.Equal(res.Stopping, []string{"queue"}) {
		t.Errorf("result %+v", res)
	}
	if ref, _, _ := l.Config().SlotRef("scorers.0"); ref.PluginRef != "kv" || ref.WeightOr1() != 3 {
		t.Errorf("slot now %+v", ref)
	}
	if _, err := l.SwapStage(context.Background(), "scorers.7", config.PluginSpec{Type: "queue-scorer"}, nil, "test"); !errors.Is(err, config.ErrNoSlot) {
		t.Errorf("swap of a missing slot: err %v, want ErrNoSlot", err)
	}
	if _, err := l.SwapStage(context.Background(), "picker", config.PluginSpec{Type: "queue-scorer"}, nil, "test"); err == nil {
		t.Error("a scorer in the picker's slot: want an error")
	}
	if g, _ := l.Generation(); g != 2 {
		t.Errorf("generation %d, want 2 (one successful swap)", g)
	}
}

func TestCyclesRunThroughReloads(t *testing.T) {
	// Cycles run without pause while the pipeline is swapped back and forth: each finishes on
	// the pipeline it began on, none meets a closed or stopped stage.
	l := start(t, queueYAML)
	configs := []*config.Config{parse(t, kvYAML), parse(t, queueYAML)}
	var stop atomic.Bool
	var ran, bad atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				tr := l.Run(context.Background(), cycle(w*1e6+i))
				ran.Add(1)
				if picked(tr) != "b" || tr.Scorers[0].Fallback != "" || tr.Picker.Fallback != "" {
					bad.Add(1)
				}
			}
		}()
	}
	for i := range 20 {
		if _, err := l.Reload(context.Background(), configs[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if ran.Load() == 0 || bad.Load() != 0 {
		t.Errorf("%d cycles, %d of them with a fallback or another pick", ran.Load(), bad.Load())
	}
}

// picked returns the id of the trace's first pick, "" when none.
func picked(tr *pipeline.Trace) string {
	if ids := tr.OrderIDs(); len(ids) > 0 {
		return ids[0]
	}
	return ""
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually.Wait(t, 5*time.Second, what, cond)
}

func TestReloadKeepsAnUnchangedExperiment(t *testing.T) {
	ab := func(picker, second string) string {
		return fmt.Sprintf(`
plugins:
  - {name: queue, type: queue-scorer}
  - {name: kv, type: kv-cache-utilization-scorer}
  - {name: pick, type: %s}
pipeline:
  scorers:
    - arms: [{name: control, pluginRef: queue}, {name: %s, pluginRef: kv}]
  picker: {pluginRef: pick}
`, picker, second)
	}
	l := start(t, ab("max-score-picker", "candidate"))
	for n := range 30 {
		tr := l.Run(context.Background(), cycle(n))
		l.Record(tr, experiment.Outcome{TTFTMs: 50})
	}
	requests := func() int64 {
		rep, ok := l.ExperimentReport()
		if !ok {
			t.Fatal("no experiment")
		}
		return rep.Arms[0].Requests + rep.Arms[1].Requests
	}
	if _, err := l.Reload(context.Background(), parse(t, ab("round-robin-picker", "candidate"))); err != nil {
		t.Fatal(err)
	}
	if n := requests(); n != 30 {
		t.Errorf("after a reload that kept the experiment: %d requests, want 30", n)
	}
	if _, err := l.Reload(context.Background(), parse(t, ab("round-robin-picker", "other"))); err != nil {
		t.Fatal(err)
	}
	if n := requests(); n != 0 {
		t.Errorf("after a reload that renamed an arm: %d requests, want a fresh experiment", n)
	}
}

// Flow control's stages are slots like the others: PUT /admin/stages/detector swaps the detector
// on a running router, and the default profile's pipeline serves them.
func TestSwapFlowControlStage(t *testing.T) {
	l := start(t, `
plugins:
  - {name: pick, type: max-score-picker}
  - {name: strict, type: saturation-detector, parameters: {queueDepth: 0}}
pipeline:
  picker: {pluginRef: pick}
  detector: {pluginRef: strict}
flowControl: {enabled: true}
`)
	// One endpoint with one request waiting, scraped 10 ms ago, some of the router's in flight.
	busy := &sdk.Cycle{Now: time.Unix(100, 0), Endpoints: []sdk.Endpoint{
		{ID: "a", State: sdk.EndpointState{Waiting: 1, Running: 3, InflightRequests: 4, MetricsAgeMs: 10}}}}
	if v, st := l.Detect(context.Background(), busy); !v.Saturated() || st.Plugin != "strict" {
		t.Fatalf("queue depth 0 on a queue of 1: %+v by %q, want saturated by strict", v, st.Plugin)
	}
	if _, err := l.SwapStage(context.Background(), "detector", config.PluginSpec{Name: "loose", Type: "saturation-detector",
		Parameters: map[string]any{"queueDepth": 4}}, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if v, st := l.Detect(context.Background(), busy); v.Saturated() || v.Room[0] != 4 || st.Plugin != "loose" {
		t.Errorf("after the swap: %+v by %q, want room 4 by loose", v, st.Plugin)
	}
}
