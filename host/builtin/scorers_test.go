package builtin

import (
	"math"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// withStates returns a cycle whose endpoints carry the given states.
func withStates(states ...sdk.EndpointState) *sdk.Cycle {
	c := cycle(len(states), 0)
	for i, s := range states {
		c.Endpoints[i].State = s
	}
	return c
}

func TestScorers(t *testing.T) {
	tests := []struct {
		name   string
		scorer sdk.Scorer
		params string
		cycle  *sdk.Cycle
		want   []float64
	}{
		{
			name: "queue, waiting by default", scorer: NewQueueScorer(), params: ``,
			// (maxQ − q)/(maxQ − minQ) with waiting 0, 5, 10: 10/10, 5/10, 0/10; in-flight ignored.
			cycle: withStates(sdk.EndpointState{Waiting: 0, InflightRequests: 9},
				sdk.EndpointState{Waiting: 5}, sdk.EndpointState{Waiting: 10}),
			want: []float64{1, 0.5, 0},
		},
		{
			name: "queue, waiting counts the dispatches since the scrape", scorer: NewQueueScorer(), params: `{"source":"waiting"}`,
			// Fresh queues 0 + 6, 5 + 0, 10 + 0 (gauge + dispatched since the scrape), min 5, max 10:
			// (10 − q)/5. The first endpoint's empty gauge no longer makes it the best.
			cycle: withStates(sdk.EndpointState{DispatchedSinceScrape: 6, InflightRequests: 6},
				sdk.EndpointState{Waiting: 5}, sdk.EndpointState{Waiting: 10}),
			want: []float64{0.8, 1, 0},
		},
		{
			name: "queue, inflight", scorer: NewQueueScorer(), params: `{"source":"inflight"}`,
			// in-flight 2, 4, 3 (min 2, max 4): (4−2)/2 = 1, (4−4)/2 = 0, (4−3)/2 = 0.5; waiting ignored.
			cycle: withStates(sdk.EndpointState{InflightRequests: 2, Waiting: 50},
				sdk.EndpointState{InflightRequests: 4}, sdk.EndpointState{InflightRequests: 3}),
			want: []float64{1, 0, 0.5},
		},
		{
			name: "queue, all equal", scorer: NewQueueScorer(), params: `{"source":"waiting"}`,
			// No spread: every endpoint scores 1.
			cycle: withStates(sdk.EndpointState{Waiting: 3}, sdk.EndpointState{Waiting: 3}),
			want:  []float64{1, 1},
		},
		{
			name: "kv cache", scorer: NewKVCacheScorer(),
			// 1 − kv: 1 − 0.2 = 0.8, 1 − 0.9 = 0.1, 1 − 1.3 → 0 (clamped), 1 − (−0.1) → 1 (clamped).
			cycle: withStates(sdk.EndpointState{KVCacheUsage: 0.2}, sdk.EndpointState{KVCacheUsage: 0.9},
				sdk.EndpointState{KVCacheUsage: 1.3}, sdk.EndpointState{KVCacheUsage: -0.1}),
			want: []float64{0.8, 0.1, 0, 1},
		},
		{
			name: "prefix", scorer: NewPrefixScorer(),
			// The match itself: 0.75, 0, and 1.2 clamped to 1.
			cycle: withStates(sdk.EndpointState{PrefixMatch: 0.75}, sdk.EndpointState{},
				sdk.EndpointState{PrefixMatch: 1.2}),
			want: []float64{0.75, 0, 1},
		},
		{
			name: "composite, default 1/1/1", scorer: NewCompositeScorer(), params: ``,
			// maxQ = 4; (1·(1 − kv) + 1·(4 − q)/4 + 1·prefix) / 3:
			//   kv 0.2, q 0, prefix 1:   (0.8 + 1 + 1) / 3     = 0.9333
			//   kv 0.5, q 4, prefix 0:   (0.5 + 0 + 0) / 3     = 0.1667
			//   kv 0.9, q 2, prefix 0.5: (0.1 + 0.5 + 0.5) / 3 = 0.3667
			cycle: withStates(sdk.EndpointState{KVCacheUsage: 0.2, Waiting: 0, PrefixMatch: 1},
				sdk.EndpointState{KVCacheUsage: 0.5, Waiting: 4},
				sdk.EndpointState{KVCacheUsage: 0.9, Waiting: 2, PrefixMatch: 0.5}),
			want: []float64{2.8 / 3, 0.5 / 3, 1.1 / 3},
		},
		{
			name: "composite, 3/2/2", scorer: NewCompositeScorer(),
			params: `{"kvCacheWeight":3,"queueWeight":2,"prefixWeight":2}`,
			// (3·(1 − kv) + 2·(4 − q)/4 + 2·prefix) / 7, same endpoints:
			//   (2.4 + 2 + 2) / 7 = 0.9143; (1.5 + 0 + 0) / 7 = 0.2143; (0.3 + 1 + 1) / 7 = 0.3286
			cycle: withStates(sdk.EndpointState{KVCacheUsage: 0.2, Waiting: 0, PrefixMatch: 1},
				sdk.EndpointState{KVCacheUsage: 0.5, Waiting: 4},
				sdk.EndpointState{KVCacheUsage: 0.9, Waiting: 2, PrefixMatch: 0.5}),
			want: []float64{6.4 / 7, 1.5 / 7, 2.3 / 7},
		},
		{
			name: "composite, queue counts the dispatches since the scrape", scorer: NewCompositeScorer(), params: ``,
			// Fresh queues 0 + 3, 4 + 0, 2 + 2 (min 3, max 4), so the first endpoint's term is 1:
			//   (0.8 + 1 + 1) / 3; (0.5 + 0 + 0) / 3; (0.1 + 0 + 0.5) / 3
			cycle: withStates(sdk.EndpointState{KVCacheUsage: 0.2, DispatchedSinceScrape: 3, PrefixMatch: 1},
				sdk.EndpointState{KVCacheUsage: 0.5, Waiting: 4},
				sdk.EndpointState{KVCacheUsage: 0.9, Waiting: 2, DispatchedSinceScrape: 2, PrefixMatch: 0.5}),
			want: []float64{2.8 / 3, 0.5 / 3, 0.6 / 3},
		},
		{
			name: "composite on the in-flight count", scorer: NewCompositeScorer(),
			params: `{"queueSource":"inflight","kvCacheWeight":0,"prefixWeight":0}`,
			// In flight 1, 3, 2 (the waiting gauges are not read): (3 − q)/2.
			cycle: withStates(sdk.EndpointState{InflightRequests: 1, Waiting: 5}, sdk.EndpointState{InflightRequests: 3},
				sdk.EndpointState{InflightRequests: 2}),
			want: []float64{1, 0, 0.5},
		},
		{
			name: "composite, queues all zero", scorer: NewCompositeScorer(), params: `{"prefixWeight":0}`,
			// maxQ = 0 → queue term 1; (1·(1 − 0.5) + 1·1) / 2 = 0.75.
			cycle: withStates(sdk.EndpointState{KVCacheUsage: 0.5, PrefixMatch: 1}),
			want:  []float64{0.75},
		},
		{
			name: "no endpoints", scorer: NewCompositeScorer(),
			cycle: cycle(0, 0), want: []float64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.scorer.Configure([]byte(tt.params)); err != nil {
				t.Fatalf("Configure(%s): %v", tt.params, err)
			}
			got, err := tt.scorer.Score(t.Context(), tt.cycle)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("scores %v, want %v", got, tt.want)
			}
			for i := range tt.want {
				if math.Abs(got[i]-tt.want[i]) > 1e-9 {
					t.Errorf("endpoint %d: score %.4f, want %.4f (all: %v)", i, got[i], tt.want[i], got)
				}
			}
		})
	}
}

func TestScorerConfigureErrors(t *testing.T) {
	tests := []struct {
		name    string
		scorer  sdk.Scorer
		params  string
		wantErr string
	}{
		{name: "queue source unknown", scorer: NewQueueScorer(), params: `{"source":"running"}`, wantErr: `"source"`},
		{name: "queue source not a string", scorer: NewQueueScorer(), params: `{"source":1}`, wantErr: `"source"`},
		{name: "composite negative weight", scorer: NewCompositeScorer(), params: `{"kvCacheWeight":-1}`, wantErr: `"kvCacheWeight"`},
		{name: "composite weight too large", scorer: NewCompositeScorer(), params: `{"queueWeight":101}`, wantErr: `"queueWeight"`},
		{name: "composite all zero", scorer: NewCompositeScorer(),
			params: `{"kvCacheWeight":0,"queueWeight":0,"prefixWeight":0}`, wantErr: "at least one"},
		{name: "composite unknown field", scorer: NewCompositeScorer(), params: `{"kvWeight":1}`, wantErr: `"kvWeight"`},
		{name: "kv takes no parameters", scorer: NewKVCacheScorer(), params: `{"weight":1}`, wantErr: `"weight"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.scorer.Configure([]byte(tt.params))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Configure(%s) error = %v, want one containing %s", tt.params, err, tt.wantErr)
			}
		})
	}
}

func TestScorerFailedConfigureKeepsParameters(t *testing.T) {
	s := NewQueueScorer()
	if err := s.Configure([]byte(`{"source":"inflight"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Configure([]byte(`{"source":"bogus"}`)); err == nil {
		t.Fatal("Configure with source \"bogus\" succeeded")
	}
	// Still in-flight: in-flight 0 and 2 score (2 − 0)/2 = 1 and 0, whatever the waiting gauge says.
	got, _ := s.Score(t.Context(), withStates(sdk.EndpointState{Waiting: 9}, sdk.EndpointState{InflightRequests: 2}))
	if got[0] != 1 || got[1] != 0 {
		t.Errorf("scores %v, want [1 0] from the previous source \"inflight\"", got)
	}
}

func TestScorerNilCycle(t *testing.T) {
	for _, s := range []sdk.Scorer{NewQueueScorer(), NewKVCacheScorer(), NewPrefixScorer(), NewCompositeScorer()} {
		if _, err := s.Score(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "nil cycle") {
			t.Errorf("%s: Score(nil) error = %v, want one mentioning the nil cycle", s.Type(), err)
		}
	}
}
