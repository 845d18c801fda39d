package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// burst returns k cycles on n idle, equal endpoints, each its own request and seed.
func roundBurst(k, n int) ([]context.Context, []*sdk.Cycle) {
	ctxs, cycles := make([]context.Context, k), make([]*sdk.Cycle, k)
	for i := range cycles {
		c := &sdk.Cycle{Request: sdk.Request{ID: fmt.Sprintf("r%d", i), InputTokens: 100}, Seed: uint64(i + 1),
			Now: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
		for e := range n {
			c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: fmt.Sprintf("e%d", e)})
		}
		ctxs[i], cycles[i] = context.Background(), c
	}
	return ctxs, cycles
}

func firstChoices(traces []*pipeline.Trace) []string {
	out := make([]string, len(traces))
	for i, t := range traces {
		if len(t.Order) > 0 {
			out[i] = t.Candidates[t.Order[0]].ID
		}
	}
	return out
}

// TestAnOldPickerInARound decides a round of 8 requests on 4 idle endpoints through a real picker
// process written against the protocol before rounds (testdata/oldpicker: no `rounds` in its
// info, every cycle answered alone): the round still takes one call per stage, every member gets
// the pick it would get alone, and none is marked accounted — so the proxy's decider decides again
// the ones whose picks collide, as it did before rounds. The same round through the SDK's picker
// process (the weighted-random picker in argmax mode) is placed in order: two requests on each
// endpoint, every member accounted.
func TestAnOldPickerInARound(t *testing.T) {
	dir := t.TempDir()
	write := func(name, picker string) string {
		file := filepath.Join(dir, name)
		yaml := "plugins:\n  - {name: load, type: queue-scorer, parameters: {source: inflight}}\n" + picker +
			"pipeline:\n  scorers: [{pluginRef: load}]\n  picker: {pluginRef: pick}\n"
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	old := write("old.yaml", fmt.Sprintf("  - {name: pick, type: old-max-score-picker, path: %s}\n", filepath.Join(root, "bin", "oldpicker")))
	current := write("current.yaml", fmt.Sprintf("  - {name: pick, type: weighted-random-picker, path: %s, parameters: {strategy: argmax}}\n", pluginBin("picker")))

	t.Run("old", func(t *testing.T) {
		p := buildFile(t, old)
		ctxs, cycles := roundBurst(8, 4)
		traces := p.RunRound(ctxs, cycles)
		alone := make([]*pipeline.Trace, len(cycles))
		for i, tr := range traces {
			if tr.Round == nil || tr.Round.Accounted || tr.Picker.Fallback != "" {
				t.Errorf("member %d: round %+v, picker fallback %q; want a round, not accounted, no fallback", i, tr.Round, tr.Picker.Fallback)
			}
			alone[i] = p.Run(context.Background(), cycles[i])
		}
		if got, want := firstChoices(traces), firstChoices(alone); !slices.Equal(got, want) {
			t.Errorf("round picks %v, alone %v: an old picker answers each cycle as if alone", got, want)
		}
		for _, s := range p.Stats() {
			if s.Calls != 16 || s.Batches != 9 { // the round's batch, then the 8 cycles alone
				t.Errorf("%s: %d calls in %d batches, want 16 in 9", s.Plugin, s.Calls, s.Batches)
			}
		}
	})
	t.Run("current", func(t *testing.T) {
		p := buildFile(t, current)
		ctxs, cycles := roundBurst(8, 4)
		traces := p.RunRound(ctxs, cycles)
		count := map[string]int{}
		for i, tr := range traces {
			if tr.Round == nil || !tr.Round.Accounted {
				t.Errorf("member %d: round %+v, want it accounted", i, tr.Round)
			}
			count[firstChoices(traces)[i]]++
		}
		if len(count) != 4 || count["e0"] != 2 || count["e1"] != 2 || count["e2"] != 2 || count["e3"] != 2 {
			t.Errorf("picks by endpoint %v, want 2 on each", count)
		}
		for _, s := range p.Stats() {
			if s.Calls != 8 || s.Batches != 1 {
				t.Errorf("%s: %d calls in %d batches, want 8 in 1", s.Plugin, s.Calls, s.Batches)
			}
		}
	})
}
