package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// testCycle is an SLO request over four endpoints with predictions, so every stage has work.
func testCycle(seed uint64) *sdk.Cycle {
	c := &sdk.Cycle{
		Request: sdk.Request{ID: fmt.Sprint("r", seed), InputTokens: 1200, Streaming: true, SLO: sdk.SLO{TTFTMs: 800, TPOTMs: 40}},
		Now:     time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		Seed:    seed,
	}
	for i := range 4 {
		c.Endpoints = append(c.Endpoints, sdk.Endpoint{
			ID:         fmt.Sprintf("vllm-%d:8000", i),
			State:      sdk.EndpointState{KVCacheUsage: 0.2 * float64(i), Waiting: int64(i), InflightRequests: int64(i + 1), PrefixMatch: 0.25 * float64(i)},
			Prediction: sdk.Prediction{Valid: true, TTFTMs: 200 + 150*float64(i), TPOTMs: 12 + 6*float64(i)},
		})
	}
	return c
}

func buildExample(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	return buildFile(t, filepath.Join(root, "examples", "pipeline.yaml"))
}

// buildFile builds the pipeline of a config file and stops it when the test ends.
func buildFile(t *testing.T, file string) *pipeline.Pipeline {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Build(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// plugin returns the pipeline's plugin called name.
func plugin(t *testing.T, p *pipeline.Pipeline, name string) *pluginhost.Plugin {
	t.Helper()
	for _, pl := range p.Plugins() {
		if pl.Name() == name {
			return pl
		}
	}
	t.Fatalf("the pipeline has no plugin %q", name)
	return nil
}

func noFallbacks(t *testing.T, tr *pipeline.Trace) {
	t.Helper()
	all := append(append([]pipeline.StageTrace{}, tr.Filters...), tr.Scorers...)
	all = append(all, *tr.Admitter, *tr.Picker)
	for _, s := range all {
		if s.Fallback != "" {
			t.Errorf("stage %v (%s) fell back: %s", s.Stage, s.Plugin, s.Fallback)
		}
	}
}

// TestCyclesThroughAllPlugins runs cycles through every plugin process of both predicted-latency
// examples: pipeline.yaml (two affinity filters, the attainment objective) and headroom.yaml
// (llm-d's profile, with the headroom filter between them).
func TestCyclesThroughAllPlugins(t *testing.T) {
	for file, filters := range map[string]int{"pipeline.yaml": 2, "headroom.yaml": 3} {
		p := buildFile(t, filepath.Join(root, "examples", file))
		for seed := range uint64(20) {
			tr := p.Run(context.Background(), testCycle(seed))
			noFallbacks(t, tr)
			if tr.Outcome() != "picked" || len(tr.Filters) != filters || len(tr.Scorers) != 1 {
				t.Fatalf("%s, seed %d: outcome %s, %d filters, %d scorers", file, seed, tr.Outcome(), len(tr.Filters), len(tr.Scorers))
			}
			// Headroom: TTFT SLO 800 − (200 + 150·i) ≥ 0 for i ≤ 4, TPOT 40 − (12 + 6·i) ≥ 0 for
			// i ≤ 4: every endpoint meets the SLO, so the positive tier is the whole fleet.
			if got := len(tr.Filters[1].Kept); filters == 3 && got != 4 {
				t.Errorf("%s, seed %d: headroom kept %d endpoints, want 4", file, seed, got)
			}
		}
	}
}

func TestKilledPluginFallsBackThenRestarts(t *testing.T) {
	p := buildExample(t)
	scorer := plugin(t, p, "latency-scorer")
	before := scorer.Status()
	if !before.Up || before.PID == 0 {
		t.Fatalf("scorer not up: %+v", before)
	}
	noFallbacks(t, p.Run(context.Background(), testCycle(1)))

	// Kill the scorer while cycles are running: cycles meanwhile use the composite fallback.
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	sawFallback := false
	deadline := time.Now().Add(20 * time.Second)
	seed := uint64(100)
	for {
		seed++
		tr := p.Run(context.Background(), testCycle(seed))
		if fb := tr.Scorers[0].Fallback; fb != "" {
			sawFallback = true
			if tr.Outcome() != "picked" {
				t.Fatalf("a cycle during the outage was not served: %s (%s)", tr.Outcome(), tr.Reason)
			}
		}
		st := scorer.Status()
		if st.Up && st.Restarts == 1 && st.PID != before.PID && sawFallback {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no restart within 20s: %+v, saw fallback %v", st, sawFallback)
		}
		time.Sleep(2 * time.Millisecond)
	}
	// Later cycles reach the restarted plugin again.
	for i := range 5 {
		tr := p.Run(context.Background(), testCycle(seed+uint64(i)+1))
		noFallbacks(t, tr)
	}
	stats := p.Stats()
	for _, s := range stats {
		if s.Plugin == "latency-scorer" && s.Fallbacks == 0 {
			t.Errorf("latency-scorer stats count no fallback: %+v", s)
		}
	}
}

// TestQuietKilledPluginRestarts kills a plugin no cycle is calling: its supervisor hears of the
// exit from the closed connection (it no longer polls quickly while nothing happens) and restarts
// it before any call needs it.
func TestQuietKilledPluginRestarts(t *testing.T) {
	p := buildExample(t)
	admitter := plugin(t, p, "slo-admitter")
	before := admitter.Status()
	if !before.Up || before.PID == 0 {
		t.Fatalf("slo-admitter not up: %+v", before)
	}
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "the killed admitter's restart", func() bool {
		st := admitter.Status()
		return st.Up && st.Restarts == 1 && st.PID != before.PID
	})
	noFallbacks(t, p.Run(context.Background(), testCycle(1)))
}

// TestConcurrentCyclesShareRoundTrips runs cycles from many goroutines at once: every one is
// served without a fallback, and cohorts make stage calls carry more than one cycle on average.
func TestConcurrentCyclesShareRoundTrips(t *testing.T) {
	p := buildExample(t)
	const workers, each = 16, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tr := p.Run(context.Background(), testCycle(uint64(w*each+i)))
				noFallbacks(t, tr)
				if tr.Outcome() != "picked" {
					t.Errorf("cycle %d: outcome %s (%s)", w*each+i, tr.Outcome(), tr.Reason)
				}
			}
		}()
	}
	wg.Wait()
	var calls, batches int64
	for _, s := range p.Stats() {
		calls, batches = calls+s.Calls, batches+s.Batches
	}
	// Five calls a cycle: two filters, the scorer, the admitter and the picker (the cycles carry
	// predictions, so the producer is skipped).
	if calls != workers*each*5 || batches >= calls {
		t.Errorf("%d stage calls in %d round trips; want %d calls sharing fewer round trips", calls, batches, workers*each*5)
	}
}

// TestFrozenPluginIsKilledAndRestarts: a scorer stopped with SIGSTOP answers nothing, not even
// go-plugin's graceful shutdown call. After missing its deadlines for the hang interval it must
// still be killed (SIGKILL, not a wait on a close that never ends) and restarted once, while
// cycles are served by the fallback.
func TestFrozenPluginIsKilledAndRestarts(t *testing.T) {
	example, err := os.ReadFile(filepath.Join(root, "examples", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// A short deadline, so that misses (two of them 2 s apart make a hang) come quickly.
	yaml := strings.Replace(string(example), "stageTimeout: 5s", "stageTimeout: 100ms", 1)
	p := buildFile(t, writeConfig(t, "frozen.yaml", yaml))
	scorer := plugin(t, p, "latency-scorer")
	before := scorer.Status()
	if err := syscall.Kill(before.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Runs before p.Close when the test fails, so that a close does not wait on a frozen process.
	t.Cleanup(func() { _ = syscall.Kill(before.PID, syscall.SIGCONT) })

	seed := uint64(1000)
	eventually.Wait(t, 20*time.Second, "the frozen scorer's kill and restart", func() bool {
		seed++
		if tr := p.Run(context.Background(), testCycle(seed)); tr.Outcome() != "picked" {
			t.Fatalf("a cycle while the scorer is frozen was not served: %s (%s)", tr.Outcome(), tr.Reason)
		}
		st := scorer.Status()
		return st.Up && st.Restarts == 1 && st.PID != before.PID
	})
	if st := scorer.Status(); st.Hangs != 1 {
		t.Errorf("one freeze counted %d hangs, want 1", st.Hangs)
	}
	// go-plugin reaps the process it started once it exits: the frozen pid is gone.
	eventually.Wait(t, 10*time.Second, "the frozen process's end", func() bool {
		return syscall.Kill(before.PID, 0) == syscall.ESRCH
	})
	eventually.Wait(t, 10*time.Second, "a cycle the restarted scorer answers", func() bool {
		seed++
		return p.Run(context.Background(), testCycle(seed)).Scorers[0].Fallback == ""
	})
}
