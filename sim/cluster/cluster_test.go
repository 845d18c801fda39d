package cluster

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/rs/zerolog"
)

func fleet(t testing.TB, n int) Config {
	t.Helper()
	return fleetOf(t, "llama-3.1-8b-h100-tp2", n)
}

// fleetOf is n servers of the engine preset, seeded 1 to n.
func fleetOf(t testing.TB, preset string, n int) Config {
	t.Helper()
	ec, err := engine.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Seed: 1}
	for i := range n {
		c := ec
		c.Seed = uint64(i + 1)
		cfg.Engines = append(cfg.Engines, c)
	}
	return cfg
}

// examplePipeline builds one of the repository's example configs (built-in stages only).
func examplePipeline(t *testing.T, name string) Router {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Build(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return PipelineRouter{Pipeline: p}
}

func scenarioC(t testing.TB, servers, n int) []workload.Request {
	t.Helper()
	w, err := workload.Scenario("C", workload.Params{Servers: servers, Requests: n, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return w.Requests
}

func TestEveryRequestIsServedAndAccounted(t *testing.T) {
	reqs := scenarioC(t, 2, 200)
	res, err := Run(fleet(t, 2), reqs, examplePipeline(t, "round-robin.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Outcomes {
		r := reqs[i]
		if o.Shed || o.TTFT <= 0 || o.E2E < o.TTFT || o.OutputTokens != r.OutputTokens || o.Arrival != r.Arrival {
			t.Fatalf("request %d: outcome %+v for %d output tokens arriving at %v", i, o, r.OutputTokens, r.Arrival)
		}
	}
}

func TestSameInputsSameOutcomes(t *testing.T) {
	reqs := scenarioC(t, 2, 150)
	a, err := Run(fleet(t, 2), reqs, examplePipeline(t, "load-prefix-322.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(fleet(t, 2), reqs, examplePipeline(t, "load-prefix-322.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with the same inputs gave different outcomes")
	}
}

// The oracle sends each request where it truly gets its first token soonest (given the state
// at arrival), so on the same arrivals it must beat round robin's median TTFT. (Against
// load-prefix-322 the greedy oracle is within a few percent either way on scenario C: see the
// issue notes; this test does not claim it wins there.)
func TestOracleBeatsRoundRobinOnMedianTTFT(t *testing.T) {
	reqs := scenarioC(t, 3, 300)
	oracle, err := Run(fleet(t, 3), reqs, Oracle{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	best := stats.Summarize(oracle.Outcomes).TTFTMs.P50
	for _, name := range []string{"round-robin.yaml"} {
		out, err := Run(fleet(t, 3), reqs, examplePipeline(t, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		if p50 := stats.Summarize(out.Outcomes).TTFTMs.P50; p50 < best {
			t.Errorf("%s: TTFT p50 %.1f ms beats the oracle's %.1f ms", name, p50, best)
		}
	}
}

// recorder routes to server 0 and keeps the cycles it saw.
type recorder struct{ cycles []*sdk.Cycle }

func (r *recorder) Route(c *sdk.Cycle, _ *Fleet) (Decision, error) {
	r.cycles = append(r.cycles, c)
	return Decision{Endpoint: 0}, nil
}

func TestCyclesShowWhatTheRouterWouldKnow(t *testing.T) {
	reqs := scenarioC(t, 2, 60)
	rec := &recorder{}
	// Each streamed request gives its TTFT sample at its first token, then its TPOT sample when it
	// finishes; a request that is not streamed gives only the second.
	ttfts, finished, streamed := map[string]bool{}, map[string]bool{}, 0
	for _, r := range reqs {
		if r.Streaming {
			streamed++
		}
	}
	observe := func(s sdk.Sample, at time.Time) {
		since := float64(at.Sub(s.DispatchedAt)) / 1e6
		switch id := s.Request.ID; {
		case s.ActualTTFTMs > 0:
			if ttfts[id] || finished[id] || s.ActualTPOTMs != 0 || s.OutputTokens != 0 || since < s.ActualTTFTMs {
				t.Errorf("TTFT sample %+v at %v ms after dispatch (TTFT seen %v, finished %v)", s, since, ttfts[id], finished[id])
			}
			ttfts[id] = true
		default:
			if finished[id] || ttfts[id] != s.Request.Streaming || s.OutputTokens <= 0 || since <= 0 {
				t.Errorf("finish sample %+v at %v ms after dispatch (TTFT seen %v, finished %v)", s, since, ttfts[id], finished[id])
			}
			finished[id] = true
		}
	}
	if _, err := Run(fleet(t, 2), reqs, rec, observe); err != nil {
		t.Fatal(err)
	}
	if len(finished) != len(reqs) || len(ttfts) != streamed {
		t.Errorf("observer got %d finish and %d TTFT samples for %d requests, %d streamed", len(finished), len(ttfts), len(reqs), streamed)
	}
	for i, c := range rec.cycles {
		if c.Now != Epoch.Add(reqs[i].Arrival) || len(c.Endpoints) != 2 {
			t.Fatalf("cycle %d: now %v, %d endpoints", i, c.Now, len(c.Endpoints))
		}
		for _, e := range c.Endpoints {
			if e.State.MetricsAgeMs < 0 || e.State.MetricsAgeMs > float64(DefaultScrapeInterval/time.Millisecond) {
				t.Fatalf("cycle %d: metrics age %v ms outside [0, 50]", i, e.State.MetricsAgeMs)
			}
		}
		// Everything went to server 0: server 1's router-side state stays empty.
		if s := c.Endpoints[1].State; s.InflightRequests != 0 || s.PrefixMatch != 0 {
			t.Fatalf("cycle %d: idle server shows %+v", i, s)
		}
	}
	// The router's in-flight count is fresh: the second request sees the first one in flight.
	if n := rec.cycles[1].Endpoints[0].State.InflightRequests; n < 1 && reqs[1].Arrival-reqs[0].Arrival < time.Second {
		t.Errorf("second cycle sees %d requests in flight on server 0, want the first one", n)
	}
}

// A follow-up turn's prompt contains the previous answer, which the engine keeps cached: once
// the first turn finishes, the router's index holds its answer's blocks too, as the live router
// records the responses it streams.
func TestFollowUpTurnMatchesTheCachedAnswer(t *testing.T) {
	turn1 := workload.Request{ID: 1, InputTokens: 64, OutputTokens: 33, Streaming: true,
		Blocks: []uint64{11, 12, 13, 14}, OutputBlocks: []uint64{15, 16}}
	turn2 := workload.Request{ID: 2, Arrival: 10 * time.Second, InputTokens: 128, OutputTokens: 8, Streaming: true,
		Blocks: []uint64{11, 12, 13, 14, 15, 16, 17, 18}}
	rec := &recorder{}
	res, err := Run(fleet(t, 2), []workload.Request{turn1, turn2}, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Outcomes[0].E2E; got <= 0 || got >= turn2.Arrival {
		t.Fatalf("turn 1 took %v; the test needs it finished before turn 2 arrives", got)
	}
	if got := rec.cycles[1].Endpoints[0].State.PrefixMatch; got != 0.75 {
		t.Errorf("turn 2's prefix match on the server that answered turn 1 is %v, want 6/8 blocks", got)
	}
	if got := res.Engines[0].PrefixCacheHits; got != 96 {
		t.Errorf("the engine served %d prompt tokens from cache, want turn 2's 96 (prompt and answer of turn 1)", got)
	}
}
