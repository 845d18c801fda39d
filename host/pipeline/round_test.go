package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// linearLoad scores an endpoint 1 − inflight/16: one more request in flight lowers it by 1/16
// whatever the others carry, so a round's after-scores add up exactly.
func linearLoad(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	out := make([]float64, len(c.Endpoints))
	for i, e := range c.Endpoints {
		out[i] = 1 - float64(e.State.InflightRequests)/16
	}
	return out, nil
}

// linearScorer is a round scorer scoring 1 − inflight/16, and one request more 1/16 lower.
type linearScorer struct{ testScorer }

func (linearScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	out := make([]float64, len(scores))
	for i, v := range scores {
		out[i] = v - 1.0/16
	}
	return out, nil
}

// roundPipeline builds a pipeline of one scorer (the built-in queue scorer on requests in flight,
// or the local scorer given) and the built-in max-score picker, in process.
func roundPipeline(t *testing.T, local sdk.Plugin) *pipeline.Pipeline {
	t.Helper()
	scorer := "  - {name: load, type: queue-scorer, parameters: {source: inflight}}\n"
	impls := map[string]sdk.Plugin{}
	if local != nil {
		scorer = "  - {name: load, type: " + local.Type() + "}\n"
		impls["load"] = local
	}
	yaml := "plugins:\n" + scorer + "  - {name: pick, type: max-score-picker}\n" +
		"pipeline:\n  scorers: [{pluginRef: load}]\n  picker: {pluginRef: pick}\n"
	cfg, err := config.Parse("round.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.BuildInProcess(context.Background(), cfg, impls, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// burstCycles returns k cycles on n idle, equal endpoints e0 … e(n-1), each its own request and seed.
func burstCycles(k, n int) []*sdk.Cycle {
	out := make([]*sdk.Cycle, k)
	for i := range out {
		c := &sdk.Cycle{Request: sdk.Request{ID: fmt.Sprintf("r%d", i), InputTokens: 100}, Seed: uint64(i + 1),
			Now: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
		for e := range n {
			c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: fmt.Sprintf("e%d", e)})
		}
		out[i] = c
	}
	return out
}

// backgrounds returns n background contexts, one per cycle of a round.
func backgrounds(n int) []context.Context {
	out := make([]context.Context, n)
	for i := range out {
		out[i] = context.Background()
	}
	return out
}

// firstPicks returns each trace's first choice.
func firstPicks(traces []*pipeline.Trace) []string {
	out := make([]string, len(traces))
	for i, t := range traces {
		if len(t.Order) > 0 {
			out[i] = t.Candidates[t.Order[0]].ID
		}
	}
	return out
}

// oneAtATime decides the cycles one after the other, each on endpoints that count the requests
// picked before it in flight where they went (sdk.PlaceOn, the router's in-flight ledger), after
// requests already sent to the endpoints named in before.
func oneAtATime(p *pipeline.Pipeline, cycles []*sdk.Cycle, before ...string) []string {
	picks := slices.Clone(before)
	for _, c := range cycles {
		c = &sdk.Cycle{Request: c.Request, Endpoints: slices.Clone(c.Endpoints), Now: c.Now, Seed: c.Seed}
		for e := range c.Endpoints {
			n := 0
			for _, id := range picks {
				if id == c.Endpoints[e].ID {
					n++
				}
			}
			sdk.PlaceOn(c, e, n)
		}
		picks = append(picks, firstPicks([]*pipeline.Trace{p.Run(context.Background(), c)})...)
	}
	return picks[len(before):]
}

// A round of k requests is decided with one call per stage, and its picks are those of deciding
// the requests one at a time, each after the one before it was dispatched.
func TestARoundIsOneCallPerStageAndPicksAsOneAtATime(t *testing.T) {
	tests := []struct {
		name  string
		local sdk.Plugin // the scorer; nil: the built-in queue scorer on requests in flight
		k, n  int
	}{
		// The queue scorer's min-max normalised score holds its scale in a round: on 4 idle
		// endpoints every score is 1 and one request more takes an endpoint to 0, two to −1, so
		// each member goes where the fewest went before it — and the spread goes on past one
		// request per endpoint, where the scores, renormalised, would all be 1 again.
		{"queue scorer, 4 on 4 endpoints", nil, 4, 4},
		{"queue scorer, 3 on 4 endpoints", nil, 3, 4},
		{"queue scorer, 8 on 4 endpoints", nil, 8, 4},
		{"queue scorer, 11 on 3 endpoints", nil, 11, 3},
		// 1 − inflight/16: after-scores that add up exactly, two rounds' worth on each endpoint.
		{"linear scorer, 8 on 4 endpoints", linearScorer{testScorer{f: linearLoad}}, 8, 4},
		{"linear scorer, 12 on 3 endpoints", linearScorer{testScorer{f: linearLoad}}, 12, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := roundPipeline(t, tt.local)
			cycles := burstCycles(tt.k, tt.n)
			ctxs := backgrounds(tt.k)
			traces := p.RunRound(ctxs, cycles)
			for _, s := range p.Stats() {
				if s.Calls != int64(tt.k) || s.Batches != 1 || s.Fallbacks != 0 {
					t.Errorf("%s: %d calls in %d batches, %d fallbacks; want %d in 1, none", s.Plugin, s.Calls, s.Batches, s.Fallbacks, tt.k)
				}
			}
			for i, tr := range traces {
				if want := (pipeline.RoundTrace{ID: traces[0].Round.ID, Position: i, Size: tt.k, Accounted: true}); tr.Round == nil || *tr.Round != want {
					t.Errorf("member %d: round %+v, want %+v", i, tr.Round, want)
				}
			}
			got, want := firstPicks(traces), oneAtATime(p, cycles)
			if !slices.Equal(got, want) {
				t.Errorf("round picks %v, one at a time %v", got, want)
			}
		})
	}
}

// A round larger than maxBatch is decided as rounds of at most maxBatch, one batch each.
func TestARoundLargerThanMaxBatchIsSplit(t *testing.T) {
	cfg, err := config.Parse("round.yaml", []byte("plugins:\n  - {name: load, type: queue-scorer, parameters: {source: inflight}}\n"+
		"  - {name: pick, type: max-score-picker}\npipeline:\n  maxBatch: 4\n  scorers: [{pluginRef: load}]\n  picker: {pluginRef: pick}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.BuildInProcess(context.Background(), cfg, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ctxs := backgrounds(6)
	traces := p.RunRound(ctxs, burstCycles(6, 4))
	for _, s := range p.Stats() {
		if s.Calls != 6 || s.Batches != 2 { // 4, then 2
			t.Errorf("%s: %d calls in %d batches, want 6 in 2", s.Plugin, s.Calls, s.Batches)
		}
	}
	for i, tr := range traces {
		pos, size := i, 4
		if i >= 4 {
			pos, size = i-4, 2
		}
		if tr.Round == nil || tr.Round.Position != pos || tr.Round.Size != size || (tr.Round.ID == traces[0].Round.ID) != (i < 4) {
			t.Errorf("member %d: round %+v, want position %d of %d in round %d", i, tr.Round, pos, size, i/4)
		}
	}
}

// A scorer that does not say what a placement does to its scores (not an sdk.RoundScorer)
// answers no after-scores: the picker places the round against unmoved scores, so every member
// picks as if alone, and none is accounted — the decider checks them as it would without rounds.
func TestARoundWithoutAfterScoresIsNotAccounted(t *testing.T) {
	p := roundPipeline(t, testScorer{f: linearLoad})
	ctxs := backgrounds(4)
	cycles := burstCycles(4, 4)
	traces := p.RunRound(ctxs, cycles)
	var alone []*pipeline.Trace
	for i, tr := range traces {
		if tr.Round == nil || tr.Round.Accounted {
			t.Errorf("member %d: round %+v, want it not accounted", i, tr.Round)
		}
		alone = append(alone, p.Run(context.Background(), cycles[i]))
	}
	if got, want := firstPicks(traces), firstPicks(alone); !slices.Equal(got, want) {
		t.Errorf("picks %v, want %v, each as it would pick alone", got, want)
	}
}

// A round decided while an earlier one was under way (RunRoundAfter) is given that round's
// placements just before its picker: its picks are those of deciding its requests one at a time
// after them, and each member's trace counts them (RoundTrace.Prior) — a round of one too, which
// is then a round so that its scorers give after-scores. A member whose scorers give none cannot
// be moved and is not accounted, so the decider checks its pick as it would without rounds.
func TestARoundAfterAnEarlierOnePicksAsOneAtATimeAfterIt(t *testing.T) {
	linear := linearScorer{testScorer{f: linearLoad}}
	tests := []struct {
		name    string
		local   sdk.Plugin // nil: the built-in queue scorer on requests in flight
		before  []string   // where the earlier round sent its requests
		k, n    int
		counted bool // the members count the earlier placements and are accounted
	}{
		{"linear scorer, 1 after 3 on 4 endpoints", linear, []string{"e0", "e1", "e2"}, 1, 4, true},
		{"linear scorer, 4 after 5 on 4 endpoints", linear, []string{"e0", "e1", "e2", "e3", "e0"}, 4, 4, true},
		{"queue scorer, 3 after 2 on 3 endpoints", nil, []string{"e1", "e1"}, 3, 3, true},
		{"no after-scores, 2 after 2 on 4 endpoints", testScorer{f: linearLoad}, []string{"e0", "e1"}, 2, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := roundPipeline(t, tt.local)
			cycles := burstCycles(tt.k, tt.n)
			ctxs := backgrounds(tt.k)
			placed := map[string]int{}
			for _, id := range tt.before {
				placed[id]++
			}
			asked := 0
			traces := p.RunRoundAfter(ctxs, cycles, func() map[string]int { asked++; return placed })
			if asked != 1 {
				t.Errorf("the earlier round's placements were asked for %d times, want once", asked)
			}
			for i, tr := range traces {
				want := pipeline.RoundTrace{ID: traces[0].Round.ID, Position: i, Size: tt.k}
				if tt.counted {
					want.Accounted, want.Prior = true, len(tt.before)
				}
				if tr.Round == nil || *tr.Round != want {
					t.Errorf("member %d: round %+v, want %+v", i, tr.Round, want)
				}
			}
			if !tt.counted {
				return
			}
			if got, want := firstPicks(traces), oneAtATime(p, cycles, tt.before...); !slices.Equal(got, want) {
				t.Errorf("picks %v after %v, one at a time %v", got, tt.before, want)
			}
		})
	}
}
