package heuristics

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// cycleOf returns a cycle whose endpoints carry the given states.
func cycleOf(states ...sdk.EndpointState) *sdk.Cycle {
	c := &sdk.Cycle{Endpoints: make([]sdk.Endpoint, len(states))}
	for i, s := range states {
		c.Endpoints[i].State = s
	}
	return c
}

// near fails the test unless got and want agree to 1e-9.
func near(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: scores %v, want %v", what, got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("%s: endpoint %d scores %.4f, want %.4f (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

func TestFreshWaiting(t *testing.T) {
	s := sdk.EndpointState{Waiting: 3, DispatchedSinceScrape: 4, InflightRequests: 9, Running: 7}
	if got := FreshWaiting(&s); got != 7 {
		t.Errorf("FreshWaiting(%+v) = %d, want 3 waiting + 4 dispatched since the scrape = 7", s, got)
	}
}

func TestCompositeScoresCountDispatchesSinceScrape(t *testing.T) {
	tests := []struct {
		name   string
		states []sdk.EndpointState
		w      CompositeParams
		want   []float64
	}{
		{
			name: "dispatches alone make the queue",
			// Fresh queues 0, 4, 2 (no gauge yet), maxQ 4; (1·(1 − kv) + 1·(4 − q)/4 + 1·prefix) / 3:
			//   (1 + 1 + 0) / 3, (1 + 0 + 0) / 3, (1 + 0.5 + 0) / 3.
			states: []sdk.EndpointState{{}, {DispatchedSinceScrape: 4}, {DispatchedSinceScrape: 2}},
			w:      DefaultCompositeParams,
			want:   []float64{2.0 / 3, 1.0 / 3, 1.5 / 3},
		},
		{
			name: "gauge and dispatches add up",
			// Fresh queues 1 + 3 = 4 and 2 + 0 = 2, min–max (4 − q)/2; queue weight only: 0 and 1.
			states: []sdk.EndpointState{{Waiting: 1, DispatchedSinceScrape: 3}, {Waiting: 2}},
			w:      CompositeParams{Queue: 1},
			want:   []float64{0, 1},
		},
		{
			name: "the lowest stale gauge loses its lead once it took the burst",
			// Scraped: 0 and 2 waiting. After 3 dispatches to the first, fresh queues 3 and 2;
			// the KV term is the scraped usage: (2·(1 − 0.5) + 1·(3 − q)/1) / 3.
			states: []sdk.EndpointState{{KVCacheUsage: 0.5, DispatchedSinceScrape: 3}, {KVCacheUsage: 0.5, Waiting: 2}},
			w:      CompositeParams{KVCache: 2, Queue: 1},
			want:   []float64{1.0 / 3, 2.0 / 3},
		},
		{
			name: "in-flight requests the gauge already shows do not count twice",
			// InflightRequests is not read: fresh queues 0 and 1, maxQ 1.
			states: []sdk.EndpointState{{InflightRequests: 10}, {DispatchedSinceScrape: 1, InflightRequests: 1}},
			w:      CompositeParams{Queue: 1},
			want:   []float64{1, 0},
		},
		{
			name: "the in-flight source reads the router's count alone",
			// In flight 10 and 1 (the second's gauge says 5 waiting): min–max 0 and 1.
			states: []sdk.EndpointState{{InflightRequests: 10}, {Waiting: 5, InflightRequests: 1}},
			w:      CompositeParams{Queue: 1, QueueSource: QueueInflight},
			want:   []float64{0, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			near(t, "CompositeScores", CompositeScores(cycleOf(tt.states...), tt.w), tt.want)
		})
	}
}

func TestQueueScoresFreshWaiting(t *testing.T) {
	// Fresh queues 0 + 5, 2 + 0, 1 + 2: min 2, max 5; (5 − q)/3 = 0, 1, 2/3.
	c := cycleOf(sdk.EndpointState{DispatchedSinceScrape: 5},
		sdk.EndpointState{Waiting: 2}, sdk.EndpointState{Waiting: 1, DispatchedSinceScrape: 2})
	near(t, "QueueScores(FreshWaiting)", QueueScores(c, FreshWaiting), []float64{0, 1, 2.0 / 3})
}

// A burst between two scrapes: every arrival sees the same scraped gauges and KV usage, and only
// DispatchedSinceScrape moves. Scored with CompositeScores and ranked with RankByScore (the
// max-score picker), the burst fills the fresh queues evenly; scored on the gauge alone, it would
// all go to the endpoint whose gauge was lowest.
func TestCompositeBurstSpreads(t *testing.T) {
	const arrivals = 40
	c := cycleOf(sdk.EndpointState{KVCacheUsage: 0.1}, sdk.EndpointState{KVCacheUsage: 0.1, Waiting: 1},
		sdk.EndpointState{KVCacheUsage: 0.1, Waiting: 1}, sdk.EndpointState{KVCacheUsage: 0.1, Waiting: 1})
	for n := range uint64(arrivals) {
		best := RankByScore(CompositeScores(c, DefaultCompositeParams), rand.New(rand.NewPCG(n, 9)))[0]
		c.Endpoints[best].State.DispatchedSinceScrape++
	}
	// 3 waiting + 40 dispatched = 43 over 4 endpoints: the fresh queues end at 10 or 11 each.
	for i := range c.Endpoints {
		if q := FreshWaiting(&c.Endpoints[i].State); q < 10 || q > 11 {
			t.Errorf("endpoint %d ends with a fresh queue of %d (%d dispatched), want 10 or 11",
				i, q, c.Endpoints[i].State.DispatchedSinceScrape)
		}
	}
}
