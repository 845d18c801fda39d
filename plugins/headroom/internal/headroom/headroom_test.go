package headroom

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// ep returns an endpoint with a valid prediction.
func ep(ttftMs, tpotMs float64) sdk.Endpoint {
	return sdk.Endpoint{Prediction: sdk.Prediction{Valid: true, TTFTMs: ttftMs, TPOTMs: tpotMs}}
}

// running returns ep(ttftMs, tpotMs) with a request whose TPOT objective is sloMs already running there.
func running(ttftMs, tpotMs, sloMs float64) sdk.Endpoint {
	e := ep(ttftMs, tpotMs)
	e.State.MinRunningTPOTSLOMs = sloMs
	return e
}

// cold returns an endpoint without a valid prediction.
func cold() sdk.Endpoint { return sdk.Endpoint{} }

// req returns a request with the given objectives (0 = none).
func req(ttftMs, tpotMs float64, streaming bool) sdk.Request {
	return sdk.Request{Streaming: streaming, SLO: sdk.SLO{TTFTMs: ttftMs, TPOTMs: tpotMs}}
}

func configured(t *testing.T, params string) *Filter {
	t.Helper()
	f := New()
	if err := f.Configure([]byte(params)); err != nil {
		t.Fatalf("Configure(%s): %v", params, err)
	}
	return f
}

// Seeds: sdk.Rand(seed 0, Type) first draws 0.489, seed 1 draws 0.569. With epsilonExploreNeg 0.5,
// seed 0 explores and seed 1 does not; with the default 0.01 neither does.
const (
	seedExplores = 0
	seedExploits = 1
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name       string
		params     string
		seed       uint64
		request    sdk.Request
		endpoints  []sdk.Endpoint
		wantKept   []int
		wantReason string
	}{
		{
			// neither objective set: no-op even though endpoint 0 is predicted far slower.
			name:       "no SLO keeps all",
			request:    req(0, 0, true),
			endpoints:  []sdk.Endpoint{ep(5000, 100), ep(100, 10), cold()},
			wantKept:   []int{0, 1, 2},
			wantReason: "no SLO",
		},
		{
			name:       "no predictions keeps all",
			request:    req(500, 50, true),
			endpoints:  []sdk.Endpoint{cold(), cold(), cold()},
			wantKept:   []int{0, 1, 2},
			wantReason: "no predictions",
		},
		{
			name:       "no endpoint",
			request:    req(500, 0, false),
			wantKept:   []int{},
			wantReason: "no predictions",
		},
		{
			// TTFT headroom 500−300 = 200, 500−500 = 0 (meets), 500−501 = −1; cold is negative.
			// Both tiers non-empty, draw 0.569 >= 0.01: positive.
			name:       "ttft SLO splits tiers",
			seed:       seedExploits,
			request:    req(500, 0, false),
			endpoints:  []sdk.Endpoint{ep(300, 10), ep(500, 10), ep(501, 10), cold()},
			wantKept:   []int{0, 1},
			wantReason: "positive tier: 2 of 4 meet the SLO",
		},
		{
			// 500−300 = 200 and 500−450 = 50, both >= 0.
			name:       "only positive tier",
			request:    req(500, 0, false),
			endpoints:  []sdk.Endpoint{ep(300, 10), ep(450, 10)},
			wantKept:   []int{0, 1},
			wantReason: "positive tier only: all 2 meet the SLO",
		},
		{
			// 500−600 = −100, 500−900 = −400, cold has no prediction: all negative, all kept.
			name:       "only negative tier",
			request:    req(500, 0, false),
			endpoints:  []sdk.Endpoint{ep(600, 10), cold(), ep(900, 10)},
			wantKept:   []int{0, 1, 2},
			wantReason: "negative tier only: none of 3 meets the SLO",
		},
		{
			// streaming, TPOT SLO 50: 50·1.0−40 = 10 meets, 50−60 = −10 misses; TTFT has no objective (+Inf).
			name:       "tpot-only SLO on a streaming request",
			seed:       seedExploits,
			request:    req(0, 50, true),
			endpoints:  []sdk.Endpoint{ep(99999, 40), ep(100, 60)},
			wantKept:   []int{0},
			wantReason: "positive tier: 1 of 2 meet the SLO",
		},
		{
			// not streaming: TPOT is not checked, both headrooms +Inf, both positive.
			name:       "tpot-only SLO on a non-streaming request",
			request:    req(0, 50, false),
			endpoints:  []sdk.Endpoint{ep(99999, 40), ep(100, 60)},
			wantKept:   []int{0, 1},
			wantReason: "positive tier only: all 2 meet the SLO",
		},
		{
			// not streaming, but the SLO is set: the endpoint without a prediction is negative.
			name:       "tpot-only SLO on a non-streaming request demotes cold endpoints",
			seed:       seedExploits,
			request:    req(0, 50, false),
			endpoints:  []sdk.Endpoint{cold(), ep(100, 60)},
			wantKept:   []int{1},
			wantReason: "positive tier: 1 of 2 meet the SLO",
		},
		{
			// endpoint 0 runs a request with TPOT SLO 30: min(50, 30)·1.0 − 40 = −10, negative;
			// endpoint 1: 50 − 40 = 10, positive. TTFT 1000−200 = 800 on both.
			name:       "running TPOT SLO makes an endpoint negative",
			seed:       seedExploits,
			request:    req(1000, 50, true),
			endpoints:  []sdk.Endpoint{running(200, 40, 30), ep(200, 40)},
			wantKept:   []int{1},
			wantReason: "positive tier: 1 of 2 meet the SLO",
		},
		{
			// the request has no TPOT objective but streams: the running 30 ms still binds, 30 − 40 = −10.
			name:       "running TPOT SLO binds a TTFT-only streaming request",
			seed:       seedExploits,
			request:    req(1000, 0, true),
			endpoints:  []sdk.Endpoint{running(200, 40, 30), ep(200, 40)},
			wantKept:   []int{1},
			wantReason: "positive tier: 1 of 2 meet the SLO",
		},
		{
			// not streaming: no TPOT headroom, the running SLO does not matter; both 1000−200 = 800.
			name:       "running TPOT SLO ignored for a non-streaming request",
			request:    req(1000, 50, false),
			endpoints:  []sdk.Endpoint{running(200, 40, 30), ep(200, 40)},
			wantKept:   []int{0, 1},
			wantReason: "positive tier only: all 2 meet the SLO",
		},
		{
			// buffer 1.5: min(50, 30)·1.5 − 40 = 5 and 50·1.5 − 40 = 35, both positive.
			name:       "buffer factor above one tolerates overshoot",
			params:     `{"sloBufferFactor": 1.5}`,
			request:    req(1000, 50, true),
			endpoints:  []sdk.Endpoint{running(200, 40, 30), ep(200, 40)},
			wantKept:   []int{0, 1},
			wantReason: "positive tier only: all 2 meet the SLO",
		},
		{
			// buffer 0.5: 50·0.5 = 25; 25 − 20 = 5 meets, 25 − 30 = −5 misses.
			name:       "buffer factor below one demands margin",
			params:     `{"sloBufferFactor": 0.5}`,
			seed:       seedExploits,
			request:    req(0, 50, true),
			endpoints:  []sdk.Endpoint{ep(100, 30), ep(100, 20)},
			wantKept:   []int{1},
			wantReason: "positive tier: 1 of 2 meet the SLO",
		},
		{
			// TTFT 500: 500−100 = 400 meets; 500−800 = −300 and cold miss. Draw 0.489 < 0.5: negative.
			name:       "both tiers, exploration draw below epsilon keeps negative",
			params:     `{"epsilonExploreNeg": 0.5}`,
			seed:       seedExplores,
			request:    req(500, 0, false),
			endpoints:  []sdk.Endpoint{ep(800, 10), ep(100, 10), cold()},
			wantKept:   []int{0, 2},
			wantReason: "explore negative tier: 2 of 3 miss the SLO",
		},
		{
			// same tiers; draw 0.569 >= 0.5: positive.
			name:       "both tiers, exploration draw above epsilon keeps positive",
			params:     `{"epsilonExploreNeg": 0.5}`,
			seed:       seedExploits,
			request:    req(500, 0, false),
			endpoints:  []sdk.Endpoint{ep(800, 10), ep(100, 10), cold()},
			wantKept:   []int{1},
			wantReason: "positive tier: 1 of 3 meet the SLO",
		},
		{
			// draw 0.489 >= 0.01 (the default): positive, although seed 0 explores at 0.5.
			name:       "both tiers, default epsilon keeps positive",
			seed:       seedExplores,
			request:    req(500, 0, false),
			endpoints:  []sdk.Endpoint{ep(800, 10), ep(100, 10), cold()},
			wantKept:   []int{1},
			wantReason: "positive tier: 1 of 3 meet the SLO",
		},
		{
			// every draw in [0, 1) is below 1.
			name:       "epsilon one always explores",
			params:     `{"epsilonExploreNeg": 1}`,
			seed:       seedExploits,
			request:    req(500, 0, false),
			endpoints:  []sdk.Endpoint{ep(800, 10), ep(100, 10)},
			wantKept:   []int{0},
			wantReason: "explore negative tier: 1 of 2 miss the SLO",
		},
		{
			// ε = 0: no draw, positive.
			name:       "epsilon zero never explores",
			params:     `{"epsilonExploreNeg": 0}`,
			seed:       seedExplores,
			request:    req(500, 0, false),
			endpoints:  []sdk.Endpoint{ep(800, 10), ep(100, 10)},
			wantKept:   []int{1},
			wantReason: "positive tier: 1 of 2 meet the SLO",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := configured(t, tt.params)
			c := &sdk.Cycle{Request: tt.request, Endpoints: tt.endpoints, Seed: tt.seed}
			got, err := f.Filter(context.Background(), c)
			if err != nil {
				t.Fatalf("Filter: %v", err)
			}
			if !slices.Equal(got.Kept, tt.wantKept) {
				t.Errorf("kept %v, want %v", got.Kept, tt.wantKept)
			}
			if got.Reason != tt.wantReason {
				t.Errorf("reason %q, want %q", got.Reason, tt.wantReason)
			}
		})
	}
}

func TestFilterNilCycle(t *testing.T) {
	if _, err := New().Filter(context.Background(), nil); err == nil {
		t.Fatal("Filter(nil) returned no error")
	}
}

func TestExplorationRate(t *testing.T) {
	// Over seeds 0..9999 the share of negative-tier verdicts should be ε. The binomial standard
	// deviation is sqrt(ε(1−ε)/n): 0.001 for ε = 0.01 and 0.005 for ε = 0.5; tolerances are 5 and 4 of them.
	tests := []struct {
		name    string
		epsilon float64
		tol     float64
	}{
		{name: "llm-d default 0.01", epsilon: 0.01, tol: 0.005},
		{name: "half", epsilon: 0.5, tol: 0.02},
	}
	const n = 10000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := configured(t, fmt.Sprintf(`{"epsilonExploreNeg": %g}`, tt.epsilon))
			sdktest.CheckRate(t, n, tt.epsilon, tt.tol, func(seed uint64) (bool, error) {
				// 500−800 < 0 negative, 500−100 >= 0 positive.
				c := &sdk.Cycle{Request: req(500, 0, false), Endpoints: []sdk.Endpoint{ep(800, 10), ep(100, 10)}, Seed: seed}
				v, err := f.Filter(context.Background(), c)
				return slices.Equal(v.Kept, []int{0}), err
			})
		})
	}
}

func TestConfigure(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		want    Params
		wantErr string // substring naming the parameter; empty for success
	}{
		{name: "empty keeps defaults", params: "", want: Defaults()},
		{name: "empty object keeps defaults", params: "{}", want: Defaults()},
		{name: "null keeps defaults", params: "null", want: Defaults()},
		{name: "one field overrides, other default", params: `{"sloBufferFactor": 0.9}`, want: Params{SLOBufferFactor: 0.9, EpsilonExploreNeg: 0.01}},
		{name: "upper bounds are inclusive", params: `{"sloBufferFactor": 10, "epsilonExploreNeg": 1}`, want: Params{SLOBufferFactor: 10, EpsilonExploreNeg: 1}},
		{name: "buffer factor zero", params: `{"sloBufferFactor": 0}`, wantErr: `"sloBufferFactor"`},
		{name: "negative buffer factor", params: `{"sloBufferFactor": -1}`, wantErr: `"sloBufferFactor"`},
		{name: "buffer factor above 10", params: `{"sloBufferFactor": 10.5}`, wantErr: `"sloBufferFactor"`},
		{name: "negative epsilon", params: `{"epsilonExploreNeg": -0.1}`, wantErr: `"epsilonExploreNeg"`},
		{name: "epsilon above 1", params: `{"epsilonExploreNeg": 1.1}`, wantErr: `"epsilonExploreNeg"`},
		{name: "unknown parameter", params: `{"epsilonExploreSticky": 0.01}`, wantErr: `"epsilonExploreSticky"`},
		{name: "wrong type", params: `{"sloBufferFactor": "1.0"}`, wantErr: `"sloBufferFactor"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New()
			// A known non-default state, to see that an error leaves it and a success replaces it.
			before := Params{SLOBufferFactor: 2, EpsilonExploreNeg: 0.3}
			if err := f.Configure([]byte(`{"sloBufferFactor": 2, "epsilonExploreNeg": 0.3}`)); err != nil {
				t.Fatal(err)
			}
			err := f.Configure([]byte(tt.params))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Configure(%s) error %v, want one naming %s", tt.params, err, tt.wantErr)
				}
				if got := *f.Get(); got != before {
					t.Errorf("after a failed Configure params are %+v, want the previous %+v", got, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("Configure(%s): %v", tt.params, err)
			}
			if got := *f.Get(); got != tt.want {
				t.Errorf("params %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigureConcurrentWithFilter(t *testing.T) {
	// Run with -race: swapping parameters while filtering must not race.
	f := New()
	// 500−800 < 0 and 500−100 >= 0 whatever the buffer factor (it scales only TPOT); ε = 0: positive.
	c := &sdk.Cycle{Request: req(500, 0, false), Endpoints: []sdk.Endpoint{ep(800, 10), ep(100, 10)}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			if err := f.Configure(fmt.Appendf(nil, `{"sloBufferFactor": %d, "epsilonExploreNeg": 0}`, 1+i%3)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 200 {
		// Before the first Configure lands ε is 0.01 and seed 0 draws 0.489: positive as well.
		v, err := f.Filter(context.Background(), c)
		if err != nil || !slices.Equal(v.Kept, []int{1}) {
			t.Fatalf("Filter = %v, %v; want kept [1]", v, err)
		}
	}
	wg.Wait()
}

func TestInfo(t *testing.T) {
	f := New()
	if f.Type() != "slo-headroom-tier-filter" {
		t.Errorf("Type() = %q", f.Type())
	}
	if f.Description() == "" {
		t.Error("Description() is empty")
	}
}
