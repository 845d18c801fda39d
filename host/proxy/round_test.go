package proxy

import (
	"context"
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
	calls     int // RunRound calls
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
	return r.RunRound([]context.Context{ctx}, []*sdk.Cycle{c})[0]
}

func (r *rounds) RunRound(ctxs []context.Context, cycles []*sdk.Cycle) []*pipeline.Trace {
	time.Sleep(20 * time.Millisecond) // as slow as a pipeline of plugin processes: a burst queues up
	traces := r.p.RunRound(ctxs, cycles)
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
