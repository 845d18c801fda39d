package cluster

import (
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/workload"
)

// matchRouter sends every request to endpoint 0 and records the prefix matches its cycles saw.
type matchRouter struct{ seen [][]float64 }

func (m *matchRouter) Route(c *sdk.Cycle, _ *Fleet) (Decision, error) {
	var match []float64
	for _, e := range c.Endpoints {
		match = append(match, e.State.PrefixMatch)
	}
	m.seen = append(m.seen, match)
	return Decision{Endpoint: 0}, nil
}

// TestKVEventsSeeTheSharedFleet: on a fleet another client shares, a prompt that client sent
// straight to server 1 is matched there by a router reading the engines' KV-cache events, and by
// no router keeping its own record; a prompt the router sent itself is matched on server 0 either
// way.
func TestKVEventsSeeTheSharedFleet(t *testing.T) {
	blocks := func(seed uint64, n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = seed<<32 | uint64(i+1)
		}
		return out
	}
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, InputTokens: 640, OutputTokens: 4, Blocks: blocks(1, 40)},                           // the other client's, to server 1
		{ID: 1, Arrival: 10 * time.Millisecond, InputTokens: 640, OutputTokens: 4, Blocks: blocks(2, 40)},       // the router's, to server 0
		{ID: 2, Arrival: 2 * time.Second, InputTokens: 656, OutputTokens: 4, Blocks: append(blocks(1, 40), 99)}, // the router's: shares request 0's prompt
		{ID: 3, Arrival: 2100 * time.Millisecond, InputTokens: 656, OutputTokens: 4, Blocks: append(blocks(2, 40), 98)},
	}
	direct := func(r *workload.Request) (int, bool) { return 1, r.ID == 0 }
	for _, events := range []bool{false, true} {
		cfg := fleet(t, 2)
		cfg.KVEvents, cfg.Direct = events, direct
		r := &matchRouter{}
		res, err := Run(cfg, reqs, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Outcomes[0].Direct || res.Outcomes[1].Direct || res.Outcomes[0].Server != "sim-1" {
			t.Fatalf("outcomes %+v: want request 0 sent directly to sim-1", res.Outcomes[:2])
		}
		if len(r.seen) != 3 {
			t.Fatalf("the router decided %d requests, want 3 (request 0 is not its)", len(r.seen))
		}
		shared, own := r.seen[1], r.seen[2] // requests 2 and 3
		if want := 40.0 / 41; own[0] != want {
			t.Errorf("events %v: request 3's match on sim-0 = %v, want %v (its own earlier prompt)", events, own[0], want)
		}
		if events && shared[1] != 40.0/41 {
			t.Errorf("with events: request 2's match on sim-1 = %v, want %v (the other client's prompt)", shared[1], 40.0/41)
		}
		if !events && shared[1] != 0 {
			t.Errorf("without events: request 2's match on sim-1 = %v, want 0 (the router never saw the prompt)", shared[1])
		}
		if got := res.Outcomes[2].CachedTokens; got != 0 {
			t.Errorf("request 2 ran on sim-0 with %d cached tokens, want 0 (its prefix is on sim-1)", got)
		}
	}
}
