package proxy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// rounds is a real in-process pipeline — a load scorer and the built-in max-score picker — that
// counts the decisions it takes. With old set it reports every member of a round as not
// accounted, as the pipeline does when its picker reports no rounds (an old single-request
// plugin).
type rounds struct {
	p   *pipeline.Pipeline
	old bool

	mu        sync.Mutex
	decisions int // cycles decided, those decided again included
	calls     int // RunRoundAfter calls
	last      map[string]string
}

func newRounds(t *testing.T, old bool) *rounds {
	cfg, err := config.Parse("rounds.yaml", []byte("plugins:\n  - {name: load, type: linear-load}\n"+
		"  - {name: pick, type: max-score-picker}\npipeline:\n  scorers: [{pluginRef: load}]\n  picker: {pluginRef: pick}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.BuildInProcess(context.Background(), cfg, map[string]sdk.Plugin{"load": linearLoad{}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &rounds{p: p, old: old, last: map[string]string{}}
}

// linearLoad scores an endpoint 1 − inflight/16: one more request in flight lowers its score by
// 1/16 whatever the other endpoints carry, so the after-scores of a round add up exactly.
type linearLoad struct{}

func (linearLoad) Type() string           { return "linear-load" }
func (linearLoad) Description() string    { return "1 − inflight/16" }
func (linearLoad) Configure([]byte) error { return nil }
func (linearLoad) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	out := make([]float64, len(c.Endpoints))
	for i, e := range c.Endpoints {
		out[i] = 1 - float64(e.State.InflightRequests)/16
	}
	return out, nil
}

// ScoreAfter says what one more request does: 1/16 off the endpoint's score.
func (linearLoad) ScoreAfter(_ context.Context, _ *sdk.Cycle, scores []float64) ([]float64, error) {
	out := make([]float64, len(scores))
	for i, v := range scores {
		out[i] = v - 1.0/16
	}
	return out, nil
}

func (r *rounds) Run(ctx context.Context, c *sdk.Cycle) *pipeline.Trace {
	return r.RunRoundAfter([]context.Context{ctx}, []*sdk.Cycle{c}, nil)[0]
}

func (r *rounds) RunRoundAfter(ctxs []context.Context, cycles []*sdk.Cycle, prior pipeline.Prior) []*pipeline.Trace {
	time.Sleep(20 * time.Millisecond) // as slow as a pipeline of plugin processes: a burst queues up
	traces := r.p.RunRoundAfter(ctxs, cycles, prior)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	for _, t := range traces {
		r.decisions++
		if t.Round != nil && r.old {
			t.Round.Accounted = false
		}
		if len(t.Order) > 0 {
			r.last[t.RequestID] = t.Candidates[t.Order[0]].ID
		}
	}
	return traces
}

// where returns how many requests each endpoint got, from each request's last decision.
func (r *rounds) where() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, ep := range r.last {
		out[ep]++
	}
	return out
}

// Eight requests at once on four idle endpoints spread two per endpoint, as one-at-a-time
// decisions would, whether the picker places rounds or not; a picker that places them decides
// the burst with fewer decisions, one batch per stage per round; with an old picker the decider
// decides again every member whose pick an earlier one took, and still dispatches them all.
func TestARoundOfABurstSpreadsAsOneAtATime(t *testing.T) {
	for _, old := range []bool{false, true} {
		sched := newRounds(t, old)
		burst(t, startRouter(t, sched, 0), 8, "Tell a long story.") // every request answered: all dispatched
		if w := sched.where(); len(w) != 4 || w["vllm-0"] != 2 || w["vllm-1"] != 2 || w["vllm-2"] != 2 || w["vllm-3"] != 2 {
			t.Errorf("old picker %v: requests by endpoint %v, want 2 on each", old, w)
		}
		var batches int64
		for _, s := range sched.p.Stats() {
			batches = max(batches, s.Batches)
			if s.Calls != int64(sched.decisions) {
				t.Errorf("old picker %v: %s made %d calls for %d decisions", old, s.Plugin, s.Calls, sched.decisions)
			}
		}
		if batches != int64(sched.calls) {
			t.Errorf("old picker %v: %d batches for %d rounds, want one per stage per round", old, batches, sched.calls)
		}
		if !old && sched.decisions != 8 {
			t.Errorf("%d decisions for 8 requests; want 8 with a picker that places rounds", sched.decisions)
		}
		t.Logf("old picker %v: %d decisions in %d rounds", old, sched.decisions, sched.calls)
	}
}

// overlapGate holds the first round in its pipeline until a second round has begun beside it,
// and records the most earlier-round placements any member counted (RoundTrace.Prior).
type overlapGate struct {
	*rounds
	mu       sync.Mutex
	calls    int
	first    chan struct{} // closed when the first round begins
	second   chan struct{} // closed when the second round begins
	overlaps bool          // the second round began while the first was held
	prior    int
}

func (g *overlapGate) RunRoundAfter(ctxs []context.Context, cycles []*sdk.Cycle, prior pipeline.Prior) []*pipeline.Trace {
	g.mu.Lock()
	g.calls++
	first := g.calls == 1
	switch g.calls {
	case 1:
		close(g.first)
	case 2:
		close(g.second)
	}
	g.mu.Unlock()
	if first {
		select {
		case <-g.second:
			g.mu.Lock()
			g.overlaps = true
			g.mu.Unlock()
		case <-time.After(5 * time.Second): // rounds that do not overlap: go on, and fail below
		}
	}
	traces := g.rounds.RunRoundAfter(ctxs, cycles, prior)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range traces {
		if t.Round != nil {
			g.prior = max(g.prior, t.Round.Prior)
		}
	}
	return traces
}

// Requests that arrive while a round is under way start the next round beside it, and the
// picks still spread as one-at-a-time decisions would: the later round counts the earlier one's
// placements before its picker, so no request is decided twice.
func TestRoundsOverlapAndSpreadAsOneAtATime(t *testing.T) {
	g := &overlapGate{rounds: newRounds(t, false), first: make(chan struct{}), second: make(chan struct{})}
	url := startRouter(t, g, 0)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); send(t, url, fmt.Sprintf("r%d", i), "Tell a long story.") }()
		if i == 3 {
			<-g.first // the first requests are under way in a round before the others arrive
		}
	}
	wg.Wait()
	if !g.overlaps {
		t.Fatal("no round began while the first was under way")
	}
	if w := g.where(); len(w) != 4 || w["vllm-0"] != 2 || w["vllm-1"] != 2 || w["vllm-2"] != 2 || w["vllm-3"] != 2 {
		t.Errorf("requests by endpoint %v, want 2 on each", w)
	}
	if g.decisions != 8 || g.prior == 0 {
		t.Errorf("%d decisions for 8 requests, at most %d earlier placements counted by a member; want 8, and some counted", g.decisions, g.prior)
	}
}
