package admitter

import (
	"context"
	"math"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// ep returns a busy, warm endpoint (one request in flight, KV cache half full) with a prediction.
func ep(id string, ttft, tpot float64) sdk.Endpoint {
	return sdk.Endpoint{
		ID:         id,
		State:      sdk.EndpointState{InflightRequests: 1, KVCacheUsage: 0.5},
		Prediction: sdk.Prediction{Valid: true, TTFTMs: ttft, TPOTMs: tpot},
	}
}

// noPred returns a busy, warm endpoint without a prediction.
func noPred(id string) sdk.Endpoint {
	e := ep(id, 0, 0)
	e.Prediction = sdk.Prediction{}
	return e
}

func withState(e sdk.Endpoint, inflight int64, kv float64) sdk.Endpoint {
	e.State.InflightRequests, e.State.KVCacheUsage = inflight, kv
	return e
}

// queued returns a busy endpoint with the given queue gauges and no prediction.
func queued(id string, waiting, sinceScrape, inflight int64) sdk.Endpoint {
	e := noPred(id)
	e.State.Waiting, e.State.DispatchedSinceScrape, e.State.InflightRequests = waiting, sinceScrape, inflight
	return e
}

func req(priority int32, ttftSLO, tpotSLO float64, streaming bool) sdk.Request {
	return sdk.Request{Priority: priority, Streaming: streaming, SLO: sdk.SLO{TTFTMs: ttftSLO, TPOTMs: tpotSLO}}
}

func TestAdmit(t *testing.T) {
	tests := []struct {
		name      string
		params    string
		request   sdk.Request
		endpoints []sdk.Endpoint
		admitted  bool
		reason    string
	}{
		{
			name:      "priority 0 is never shed",
			request:   req(0, 100, 0, false),
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 900, 20)},
			admitted:  true, reason: "priority 0 is not sheddable",
		},
		{
			name:      "positive priority is never shed",
			params:    `{"mode": "budget"}`,
			request:   req(3, 100, 0, false),
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 900, 20)},
			admitted:  true, reason: "priority 3 is not sheddable",
		},
		{
			name:      "no SLO",
			request:   req(-1, 0, 0, true),
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 900, 20)},
			admitted:  true, reason: "no SLO",
		},
		{
			name:      "no predictions: fail open",
			request:   req(-1, 100, 0, false),
			endpoints: []sdk.Endpoint{noPred("10.0.0.1"), noPred("10.0.0.2")},
			admitted:  true, reason: "no predictions: fail open",
		},
		{
			name:    "a NaN prediction is no prediction",
			request: req(-1, 100, 0, false),
			endpoints: []sdk.Endpoint{{ID: "10.0.0.1", State: sdk.EndpointState{InflightRequests: 1, KVCacheUsage: 0.5},
				Prediction: sdk.Prediction{Valid: true, TTFTMs: math.NaN()}}},
			admitted: true, reason: "no predictions: fail open",
		},
		{
			name:    "an endpoint meets the SLO",
			request: req(-1, 500, 50, true),
			// .1: TTFT 500 − 600 < 0; .3: 500 − 300 = 200, TPOT 50 − 40 = 10 → meets.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 600, 20), noPred("10.0.0.2"), ep("10.0.0.3", 300, 40)},
			admitted:  true, reason: "endpoint 10.0.0.3 meets the SLO",
		},
		{
			name:    "a TPOT-only SLO on a non-streaming request always meets",
			request: req(-1, 0, 50, false),
			// No TPOT headroom without streaming, no TTFT objective: both headrooms +Inf.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 900, 90)},
			admitted:  true, reason: "endpoint 10.0.0.1 meets the SLO",
		},
		{
			name:    "sloBufferFactor tightens the TPOT objective",
			params:  `{"sloBufferFactor": 0.5}`,
			request: req(-1, 0, 50, true),
			// TPOT headroom 50·0.5 − 30 = −5: misses, and nothing is idle or cold.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 100, 30)},
			admitted:  false, reason: "rejected: no endpoint meets the SLO (best TPOT headroom -5ms), none idle or cold",
		},
		{
			name:    "an idle endpoint admits",
			request: req(-1, 100, 0, false),
			// Both miss TTFT; .2 has no prediction but nothing in flight.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 600, 20), withState(noPred("10.0.0.2"), 0, 0.5)},
			admitted:  true, reason: "endpoint 10.0.0.2 is idle",
		},
		{
			name:      "a cold endpoint admits",
			request:   req(-1, 100, 0, false),
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 600, 20), withState(ep("10.0.0.2", 700, 20), 3, 0.01)},
			admitted:  true, reason: "endpoint 10.0.0.2 is cold (KV cache 1% < 2%)",
		},
		{
			name:      "coldKVThreshold 0 disables the cold escape",
			params:    `{"coldKVThreshold": 0}`,
			request:   req(-1, 100, 0, false),
			endpoints: []sdk.Endpoint{withState(ep("10.0.0.1", 220, 20), 3, 0)},
			admitted:  false, reason: "rejected: no endpoint meets the SLO (best TTFT headroom -120ms), none idle or cold",
		},
		{
			name:    "rejected: no endpoint meets, none idle or cold",
			request: req(-2, 100, 50, true),
			// Headrooms .1 (−120, −10), .2 (−500, 5), .3 (no prediction): best TTFT −120, best TPOT 5.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 220, 60), ep("10.0.0.2", 600, 45), noPred("10.0.0.3")},
			admitted:  false, reason: "rejected: no endpoint meets the SLO (best TTFT headroom -120ms, best TPOT headroom 5ms), none idle or cold",
		},
		{
			name:    "budget: within the class budget",
			params:  `{"mode": "budget"}`,
			request: req(-2, 0, 0, false),
			// Best TTFT 180 on .2 ≤ 300 (priority −2) × 1.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 450, 20), ep("10.0.0.2", 180, 20), noPred("10.0.0.3")},
			admitted:  true, reason: "best predicted TTFT 180ms on 10.0.0.2 is within the priority -2 budget 300ms × 1",
		},
		{
			name:    "budget: over the class budget",
			params:  `{"mode": "budget"}`,
			request: req(-2, 0, 0, false),
			// Best TTFT 450 > 300 × 1; no idle or cold escape in budget mode.
			endpoints: []sdk.Endpoint{withState(ep("10.0.0.1", 450, 20), 0, 0)},
			admitted:  false, reason: "rejected: best predicted TTFT 450ms on 10.0.0.1 exceeds the priority -2 budget 300ms × 1",
		},
		{
			name:    "budget: the multiplier widens the budget",
			params:  `{"mode": "budget", "headroomMultiplier": 1.5}`,
			request: req(-2, 0, 0, false),
			// 450 ≤ 300 × 1.5 = 450.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 450, 20)},
			admitted:  true, reason: "best predicted TTFT 450ms on 10.0.0.1 is within the priority -2 budget 300ms × 1.5",
		},
		{
			name:    "budget: the request's TTFT SLO overrides the class budget",
			params:  `{"mode": "budget"}`,
			request: req(-1, 400, 0, false),
			// 450 > 400 × 1 although the priority −1 budget is 500.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 450, 20)},
			admitted:  false, reason: "rejected: best predicted TTFT 450ms on 10.0.0.1 exceeds the request's TTFT SLO 400ms × 1",
		},
		{
			name:    "budget: an unlisted priority takes the nearest class",
			params:  `{"mode": "budget"}`,
			request: req(-7, 0, 0, false),
			// Nearest listed to −7 is −2 (300): 350 > 300.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 350, 20)},
			admitted:  false, reason: "rejected: best predicted TTFT 350ms on 10.0.0.1 exceeds the priority -2 budget 300ms × 1",
		},
		{
			name:    "budget: a tie goes to the lower priority",
			params:  `{"mode": "budget", "budgetsMs": {"-1": 500, "-3": 200}}`,
			request: req(-2, 0, 0, false),
			// −1 and −3 are both one away; −3 (200) applies: 350 > 200.
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 350, 20)},
			admitted:  false, reason: "rejected: best predicted TTFT 350ms on 10.0.0.1 exceeds the priority -3 budget 200ms × 1",
		},
		{
			name:      "budget: no class and no SLO admits",
			params:    `{"mode": "budget", "budgetsMs": {}}`,
			request:   req(-1, 0, 0, false),
			endpoints: []sdk.Endpoint{ep("10.0.0.1", 9000, 20)},
			admitted:  true, reason: "no TTFT budget for priority -1",
		},
		{
			name:      "budget: no predictions: fail open",
			params:    `{"mode": "budget"}`,
			request:   req(-2, 0, 0, false),
			endpoints: []sdk.Endpoint{noPred("10.0.0.1")},
			admitted:  true, reason: "no predictions: fail open",
		},
		{
			name:    "queue-depth: the busiest waiting queue below the bound admits",
			params:  `{"mode": "queue-depth"}`,
			request: req(-2, 0, 0, false),
			// Waiting + dispatched since scrape: .1 3+1 = 4, .2 30+11 = 41 (the max); 41 < 42.
			endpoints: []sdk.Endpoint{queued("10.0.0.1", 3, 1, 5), queued("10.0.0.2", 30, 11, 5)},
			admitted:  true, reason: "max waiting queue 41 on 10.0.0.2 is below the priority -2 bound 42",
		},
		{
			name:    "queue-depth: reaching the bound sheds",
			params:  `{"mode": "queue-depth"}`,
			request: req(-2, 300, 0, false),
			// .2: 30 + 12 = 42, not below 42. The SLO plays no part.
			endpoints: []sdk.Endpoint{queued("10.0.0.1", 3, 1, 5), queued("10.0.0.2", 30, 12, 5)},
			admitted:  false, reason: "rejected: max waiting queue 42 on 10.0.0.2 reaches the priority -2 bound 42",
		},
		{
			name:    "queue-depth: the standard class has the longer bound",
			params:  `{"mode": "queue-depth"}`,
			request: req(-1, 0, 0, false),
			// 42 < 71.
			endpoints: []sdk.Endpoint{queued("10.0.0.1", 30, 12, 5)},
			admitted:  true, reason: "max waiting queue 42 on 10.0.0.1 is below the priority -1 bound 71",
		},
		{
			name:    "queue-depth: queueOf min gates on the shortest queue, in-flight source",
			params:  `{"mode": "queue-depth", "queueOf": "min", "queueSource": "inflight", "queueBounds": {"-1": 4}}`,
			request: req(-1, 0, 0, false),
			// In flight: .1 6, .2 4 (the min); 4 is not below 4.
			endpoints: []sdk.Endpoint{queued("10.0.0.1", 0, 0, 6), queued("10.0.0.2", 50, 0, 4)},
			admitted:  false, reason: "rejected: min inflight queue 4 on 10.0.0.2 reaches the priority -1 bound 4",
		},
		{
			name:      "queue-depth: no bounds admits",
			params:    `{"mode": "queue-depth", "queueBounds": {}}`,
			request:   req(-1, 0, 0, false),
			endpoints: []sdk.Endpoint{queued("10.0.0.1", 500, 0, 5)},
			admitted:  true, reason: "no queue bound for priority -1",
		},
		{
			name:      "queue-depth: no endpoints admits",
			params:    `{"mode": "queue-depth"}`,
			request:   req(-1, 0, 0, false),
			endpoints: nil,
			admitted:  true, reason: "no endpoints: nothing to gate on",
		},
		{
			name:      "queue-depth: priority 0 is never shed",
			params:    `{"mode": "queue-depth", "queueBounds": {"-1": 0}}`,
			request:   req(0, 0, 0, false),
			endpoints: []sdk.Endpoint{queued("10.0.0.1", 500, 0, 5)},
			admitted:  true, reason: "priority 0 is not sheddable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New()
			if err := a.Configure([]byte(tt.params)); err != nil {
				t.Fatalf("Configure(%s): %v", tt.params, err)
			}
			got, err := a.Admit(context.Background(), &sdk.Cycle{Request: tt.request, Endpoints: tt.endpoints})
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if got.Admitted != tt.admitted || got.Reason != tt.reason {
				t.Errorf("Admit = {%v, %q}, want {%v, %q}", got.Admitted, got.Reason, tt.admitted, tt.reason)
			}
		})
	}
}

func TestAdmitNilCycle(t *testing.T) {
	if _, err := New().Admit(context.Background(), nil); err == nil {
		t.Fatal("Admit(nil) succeeded, want an error")
	}
}
