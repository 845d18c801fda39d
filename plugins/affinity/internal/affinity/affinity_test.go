package affinity

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

// ep returns an endpoint with the given prefix match and a valid TTFT prediction.
func ep(prefix, ttftMs float64) sdk.Endpoint {
	return sdk.Endpoint{
		State:      sdk.EndpointState{PrefixMatch: prefix},
		Prediction: sdk.Prediction{Valid: true, TTFTMs: ttftMs, TPOTMs: 20},
	}
}

// cold returns an endpoint with the given prefix match and no valid prediction.
func cold(prefix float64) sdk.Endpoint {
	return sdk.Endpoint{State: sdk.EndpointState{PrefixMatch: prefix}}
}

func configured(t *testing.T, params string) *Filter {
	t.Helper()
	f := New()
	if err := f.Configure([]byte(params)); err != nil {
		t.Fatalf("Configure(%s): %v", params, err)
	}
	return f
}

// Seeds for explorationProbability 0.5: sdk.Rand(seed 6, Type) first draws 0.245 (< 0.5, explores),
// seed 0 first draws 0.737 (>= 0.5, does not).
const (
	seedExplores = 6
	seedExploits = 0
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name       string
		params     string
		seed       uint64
		endpoints  []sdk.Endpoint
		wantKept   []int
		wantReason string
	}{
		{
			name:       "no endpoint",
			wantKept:   []int{},
			wantReason: "0 endpoint(s), nothing to narrow",
		},
		{
			name:       "one endpoint is kept even when cold",
			endpoints:  []sdk.Endpoint{ep(0.1, 100)},
			wantKept:   []int{0},
			wantReason: "1 endpoint(s), nothing to narrow",
		},
		{
			// draw 0.245 < 0.5: bypass, although 0 and 1 are sticky.
			name:       "exploration draw below epsilon keeps all",
			params:     `{"explorationProbability": 0.5}`,
			seed:       seedExplores,
			endpoints:  []sdk.Endpoint{ep(0.9, 100), ep(0.85, 200), ep(0.1, 100)},
			wantKept:   []int{0, 1, 2},
			wantReason: "explore",
		},
		{
			// draw 0.737 >= 0.5: exploit; sticky = {0, 1}; 100 > 100 + 5000 is false.
			name:       "exploration draw above epsilon exploits",
			params:     `{"explorationProbability": 0.5}`,
			seed:       seedExploits,
			endpoints:  []sdk.Endpoint{ep(0.9, 100), ep(0.85, 200), ep(0.1, 100)},
			wantKept:   []int{0, 1},
			wantReason: "sticky: 2 of 3 with prefix >= 0.80",
		},
		{
			// every draw in [0, 1) is below 1.
			name:       "epsilon one always explores",
			params:     `{"explorationProbability": 1}`,
			seed:       seedExploits,
			endpoints:  []sdk.Endpoint{ep(0.9, 100), ep(0.1, 100)},
			wantKept:   []int{0, 1},
			wantReason: "explore",
		},
		{
			// 0.5 and 0.79 are both below 0.80.
			name:       "no sticky endpoint keeps all",
			endpoints:  []sdk.Endpoint{ep(0.5, 100), ep(0.79, 100)},
			wantKept:   []int{0, 1},
			wantReason: "no sticky endpoint with prefix >= 0.80",
		},
		{
			// 0.80 >= 0.80 is sticky, 0.7999 is not.
			name:       "prefix equal to threshold is sticky",
			endpoints:  []sdk.Endpoint{ep(0.7999, 100), ep(0.80, 100)},
			wantKept:   []int{1},
			wantReason: "sticky: 1 of 2 with prefix >= 0.80",
		},
		{
			// strict instance: only 0.995 >= 0.99.
			name:       "strict threshold",
			params:     `{"affinityThreshold": 0.99}`,
			endpoints:  []sdk.Endpoint{ep(0.95, 100), ep(0.995, 100), ep(0.2, 100)},
			wantKept:   []int{1},
			wantReason: "sticky: 1 of 3 with prefix >= 0.99",
		},
		{
			// threshold 0.875 is printed in full, not rounded to 0.88.
			name:       "threshold with three decimals in reason",
			params:     `{"affinityThreshold": 0.875}`,
			endpoints:  []sdk.Endpoint{ep(0.9, 100), ep(0.87, 100)},
			wantKept:   []int{0},
			wantReason: "sticky: 1 of 2 with prefix >= 0.875",
		},
		{
			// sticky best min(900, 1200) = 900; non-sticky best 120; 900 > 120 + 500 = 620.
			name:       "ttft penalty breaks affinity",
			params:     `{"maxTTFTPenaltyMs": 500}`,
			endpoints:  []sdk.Endpoint{ep(0.9, 1200), ep(0.95, 900), ep(0.1, 120), ep(0.2, 400)},
			wantKept:   []int{0, 1, 2, 3},
			wantReason: "ttft penalty: sticky best 900ms vs 120ms",
		},
		{
			// 900 > 120 + 5000 = 5120 is false.
			name:       "ttft gap within default penalty keeps sticky",
			endpoints:  []sdk.Endpoint{ep(0.9, 1200), ep(0.95, 900), ep(0.1, 120), ep(0.2, 400)},
			wantKept:   []int{0, 1},
			wantReason: "sticky: 2 of 4 with prefix >= 0.80",
		},
		{
			// 620 > 120 + 500 = 620 is false: the penalty is exclusive.
			name:       "ttft gap equal to penalty keeps sticky",
			params:     `{"maxTTFTPenaltyMs": 500}`,
			endpoints:  []sdk.Endpoint{ep(0.9, 620), ep(0.1, 120)},
			wantKept:   []int{0},
			wantReason: "sticky: 1 of 2 with prefix >= 0.80",
		},
		{
			// penalty 0: 121 > 120 + 0.
			name:       "zero penalty breaks on any gap",
			params:     `{"maxTTFTPenaltyMs": 0}`,
			endpoints:  []sdk.Endpoint{ep(0.9, 121), ep(0.1, 120)},
			wantKept:   []int{0, 1},
			wantReason: "ttft penalty: sticky best 121ms vs 120ms",
		},
		{
			// sticky best +Inf (no prediction) > 120 + 5000.
			name:       "sticky without prediction loses to predicted non-sticky",
			endpoints:  []sdk.Endpoint{cold(0.9), cold(0.95), ep(0.1, 120)},
			wantKept:   []int{0, 1, 2},
			wantReason: "ttft penalty: sticky best no prediction vs 120ms",
		},
		{
			// sticky best min(+Inf, 300) = 300 > 100 + 100 = 200: the unpredicted sticky does not mask the other.
			name:       "sticky best ignores sticky without prediction",
			params:     `{"maxTTFTPenaltyMs": 100}`,
			endpoints:  []sdk.Endpoint{cold(0.9), ep(0.9, 300), ep(0.1, 100)},
			wantKept:   []int{0, 1, 2},
			wantReason: "ttft penalty: sticky best 300ms vs 100ms",
		},
		{
			// 900 > +Inf + 5000 is false.
			name:       "non-sticky without prediction keeps sticky",
			endpoints:  []sdk.Endpoint{cold(0.1), ep(0.9, 900), cold(0.3)},
			wantKept:   []int{1},
			wantReason: "sticky: 1 of 3 with prefix >= 0.80",
		},
		{
			// +Inf > +Inf + 5000 is false: nothing to compare, the cache match decides.
			name:       "no predictions at all keeps sticky",
			endpoints:  []sdk.Endpoint{cold(0.1), cold(0.9), cold(0.85)},
			wantKept:   []int{1, 2},
			wantReason: "sticky: 2 of 3 with prefix >= 0.80",
		},
		{
			// 0.9, 0.8, 1.0 all >= 0.80: nothing to narrow, even with a large TTFT spread.
			name:       "all sticky keeps all",
			params:     `{"maxTTFTPenaltyMs": 0}`,
			endpoints:  []sdk.Endpoint{ep(0.9, 100), ep(0.8, 9000), ep(1, 50)},
			wantKept:   []int{0, 1, 2},
			wantReason: "all 3 endpoints sticky",
		},
		{
			// every prefix >= 0.
			name:       "zero threshold makes all sticky",
			params:     `{"affinityThreshold": 0}`,
			endpoints:  []sdk.Endpoint{ep(0, 100), ep(0.3, 100)},
			wantKept:   []int{0, 1},
			wantReason: "all 2 endpoints sticky",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := configured(t, tt.params)
			c := &sdk.Cycle{Endpoints: tt.endpoints, Seed: tt.seed}
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
	// Over seeds 0..9999 the share of "explore" verdicts should be ε. The binomial standard deviation
	// is sqrt(ε(1−ε)/n): 0.001 for ε = 0.01 and 0.005 for ε = 0.5; the tolerances are 5 and 4 of them.
	tests := []struct {
		name    string
		epsilon float64
		tol     float64
	}{
		{name: "blog default 0.01", epsilon: 0.01, tol: 0.005},
		{name: "half", epsilon: 0.5, tol: 0.02},
		{name: "llm-d default 0 never explores", epsilon: 0, tol: 0},
	}
	const n = 10000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := configured(t, fmt.Sprintf(`{"explorationProbability": %g}`, tt.epsilon))
			sdktest.CheckRate(t, n, tt.epsilon, tt.tol, func(seed uint64) (bool, error) {
				c := &sdk.Cycle{Endpoints: []sdk.Endpoint{ep(0.9, 100), ep(0.1, 100)}, Seed: seed}
				v, err := f.Filter(context.Background(), c)
				return v.Reason == "explore", err
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
		{
			name:   "one field overrides, others default",
			params: `{"affinityThreshold": 0.99}`,
			want:   Params{AffinityThreshold: 0.99, ExplorationProbability: 0, MaxTTFTPenaltyMs: 5000},
		},
		{
			name:   "all fields",
			params: `{"affinityThreshold": 0.5, "explorationProbability": 0.01, "maxTTFTPenaltyMs": 1e7}`,
			want:   Params{AffinityThreshold: 0.5, ExplorationProbability: 0.01, MaxTTFTPenaltyMs: 1e7},
		},
		{name: "threshold above 1", params: `{"affinityThreshold": 1.5}`, wantErr: `"affinityThreshold"`},
		{name: "negative threshold", params: `{"affinityThreshold": -0.1}`, wantErr: `"affinityThreshold"`},
		{name: "negative exploration", params: `{"explorationProbability": -0.01}`, wantErr: `"explorationProbability"`},
		{name: "exploration above 1", params: `{"explorationProbability": 1.01}`, wantErr: `"explorationProbability"`},
		{name: "negative penalty", params: `{"maxTTFTPenaltyMs": -1}`, wantErr: `"maxTTFTPenaltyMs"`},
		{name: "penalty above 1e7", params: `{"maxTTFTPenaltyMs": 1e8}`, wantErr: `"maxTTFTPenaltyMs"`},
		{name: "unknown parameter", params: `{"affinityGateTau": 0.8}`, wantErr: `"affinityGateTau"`},
		{name: "wrong type", params: `{"affinityThreshold": "high"}`, wantErr: `"affinityThreshold"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New()
			// A known non-default state, to see that an error leaves it and a success replaces it.
			before := Params{AffinityThreshold: 0.3, ExplorationProbability: 0.2, MaxTTFTPenaltyMs: 10}
			if err := f.Configure([]byte(`{"affinityThreshold": 0.3, "explorationProbability": 0.2, "maxTTFTPenaltyMs": 10}`)); err != nil {
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
	c := &sdk.Cycle{Endpoints: []sdk.Endpoint{ep(0.9, 100), ep(0.1, 100)}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			if err := f.Configure(fmt.Appendf(nil, `{"affinityThreshold": %g}`, float64(i%2)*0.5+0.4)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 200 {
		// Threshold 0.4 or 0.9: either way endpoint 0 (prefix 0.9) is the only sticky one.
		v, err := f.Filter(context.Background(), c)
		if err != nil || !slices.Equal(v.Kept, []int{0}) {
			t.Fatalf("Filter = %v, %v; want kept [0]", v, err)
		}
	}
	wg.Wait()
}

func TestInfo(t *testing.T) {
	f := New()
	if f.Type() != "prefix-cache-affinity-filter" {
		t.Errorf("Type() = %q", f.Type())
	}
	if f.Description() == "" {
		t.Error("Description() is empty")
	}
}
