package bench

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/sim/workload"
)

// TestBenchRoutingPrefixSources runs one strategy with both prefix sources on a fleet shared with
// another client: two runs, the events' named NAME@events; the routed requests' figures exclude
// the direct ones, which are summarized apart; and the trace's ideal cached ratio bounds both.
func TestBenchRoutingPrefixSources(t *testing.T) {
	o := RoutingOptions{Scenario: "C", Servers: 2, Requests: 200, Seed: 1, Preset: "llama-3.1-8b-h100-tp2",
		Noise: 0.05, Strategies: "load-prefix-322", Examples: "../examples", Prefix: PrefixBoth, Shared: 0.5}
	res, err := RunRouting(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Prefix != PrefixBoth || res.Shared != 0.5 {
		t.Fatalf("result says prefix %q shared %v", res.Prefix, res.Shared)
	}
	for _, name := range []string{"load-prefix-322", "load-prefix-322" + EventsSuffix} {
		s, ok := res.Strategies[name]
		if !ok || s.Summary == nil || s.Direct == nil {
			t.Fatalf("strategy %q: %+v", name, s)
		}
		if routed, direct := s.Requests, s.Direct.Requests; routed+direct != 200 || routed < 60 || direct < 60 {
			t.Errorf("%s: %d routed and %d direct requests, want 200 split about evenly", name, routed, direct)
		}
		if s.CachedRatio < 0 || s.CachedRatio > res.IdealCachedRatio+1e-9 {
			t.Errorf("%s: cached ratio %v outside [0, the ideal %v]", name, s.CachedRatio, res.IdealCachedRatio)
		}
	}
	for _, bad := range []RoutingOptions{{Prefix: "engine"}, {Shared: 1}, {Shared: -0.1}} {
		bad.Scenario, bad.Servers, bad.Requests, bad.Strategies, bad.Examples = "C", 2, 10, "rr", "../examples"
		if _, err := RunRouting(context.Background(), bad); err == nil {
			t.Errorf("RunRouting(prefix %q, shared %v) accepted", bad.Prefix, bad.Shared)
		}
	}
}

// TestIdealCachedRatio: every block seen before counts, the last token never does, and direct
// requests fill the cache without counting.
func TestIdealCachedRatio(t *testing.T) {
	reqs := []workload.Request{
		{ID: 0, InputTokens: 32, Blocks: []uint64{1, 2}},
		{ID: 1, InputTokens: 48, Blocks: []uint64{1, 2, 3}}, // 32 of 48 cached
		{ID: 2, InputTokens: 32, Blocks: []uint64{1, 2}},    // all cached but the last token: 31
	}
	if got, want := idealCachedRatio(reqs, nil), float64(32+31)/float64(32+48+32); got != want {
		t.Errorf("ideal = %v, want %v", got, want)
	}
	direct := func(r *workload.Request) (int, bool) { return 0, r.ID == 0 }
	if got, want := idealCachedRatio(reqs, direct), float64(32+31)/float64(48+32); got != want {
		t.Errorf("ideal with request 0 direct = %v, want %v", got, want)
	}
}
