package flowpolicy

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// predicted is a busy endpoint (one of the router's requests in flight) with a valid TTFT
// prediction and empty gauges (which the prediction rule must ignore).
func predicted(ttftMs float64) sdk.Endpoint {
	return sdk.Endpoint{Prediction: sdk.Prediction{Valid: true, TTFTMs: ttftMs}, State: sdk.EndpointState{InflightRequests: 1}}
}

// gauged is an endpoint without a valid prediction, judged by its state.
func gauged(s sdk.EndpointState) sdk.Endpoint { return sdk.Endpoint{State: s} }

// fresh gauges: scraped 50 ms ago, within the default 200 ms.
func fresh(waiting, sinceScrape int64, kv float64) sdk.EndpointState {
	return sdk.EndpointState{Waiting: waiting, DispatchedSinceScrape: sinceScrape, KVCacheUsage: kv, MetricsAgeMs: 50, InflightRequests: waiting + sinceScrape}
}

// withRate is an endpoint judged by its state s, starting rate requests a second.
func withRate(s sdk.EndpointState, rate float64) sdk.Endpoint {
	s.FirstTokenRate = rate
	return sdk.Endpoint{State: s}
}

func slo(ttftMs float64) sdk.Request { return sdk.Request{SLO: sdk.SLO{TTFTMs: ttftMs}} }

// workedParams are the bounds TestPredictedDetectorRules' cases are worked out with: llm-d's
// gauge thresholds (queue 5, KV 0.8, in flight 100), objective × 1 or a wait within 500 ms.
const workedParams = `{"queueDepth": 5, "kvCacheUsage": 0.8, "maxInflight": 100}`

func TestPredictedDetectorRules(t *testing.T) {
	cases := []struct {
		name   string
		params string // instead of workedParams
		req    sdk.Request
		eps    []sdk.Endpoint
		room   []int
		reason string
		waitMs float64 // -1: unknown
	}{
		{name: "one of two within the SLO", req: slo(450), eps: []sdk.Endpoint{predicted(600), predicted(400)}, room: []int{0, 1}, waitMs: 400},
		{name: "at the SLO exactly has room", req: slo(450), eps: []sdk.Endpoint{predicted(450)}, room: []int{1}, waitMs: 450},
		{name: "all over the SLO and the wait bound", req: slo(450), eps: []sdk.Endpoint{predicted(600), predicted(700)}, room: []int{0, 0}, reason: ReasonPredictedFull, waitMs: 600},
		{name: "over the SLO, wait 500 at the bound has room", req: slo(450), eps: []sdk.Endpoint{predicted(500)}, room: []int{1}, waitMs: 500},
		{name: "margin 0.8 makes 400 over 360", params: `{"queueDepth": 5, "kvCacheUsage": 0.8, "maxInflight": 100, "ttftMargin": 0.8, "maxPredictedWaitMs": 300}`, req: slo(450), eps: []sdk.Endpoint{predicted(400)}, room: []int{0}, reason: ReasonPredictedFull, waitMs: 400},
		{name: "a loose SLO tolerates a long wait", req: slo(2000), eps: []sdk.Endpoint{predicted(1500)}, room: []int{1}, waitMs: 1500},
		{name: "no SLO: TTFT 500 at the wait bound", eps: []sdk.Endpoint{predicted(500)}, room: []int{1}, waitMs: 500},
		{name: "no SLO: TTFT 501 over", eps: []sdk.Endpoint{predicted(501)}, room: []int{0}, reason: ReasonPredictedFull, waitMs: 501},
		// Idle endpoints have room whatever their prediction.
		{name: "idle: nothing in flight, fresh gauges empty", req: slo(450), eps: []sdk.Endpoint{{Prediction: sdk.Prediction{Valid: true, TTFTMs: 5000}, State: sdk.EndpointState{MetricsAgeMs: 50}}, predicted(900)}, room: []int{6, 0}, waitMs: 0},
		{name: "idle: nothing in flight, stale gauges", eps: []sdk.Endpoint{{Prediction: sdk.Prediction{Valid: true, TTFTMs: 5000}, State: sdk.EndpointState{Running: 3, MetricsAgeMs: 300}}}, room: []int{100}, waitMs: 0},
		{name: "not idle: nothing in flight but the engine runs", eps: []sdk.Endpoint{{Prediction: sdk.Prediction{Valid: true, TTFTMs: 5000}, State: sdk.EndpointState{Running: 3, MetricsAgeMs: 50}}}, room: []int{0}, reason: ReasonPredictedFull, waitMs: 5000},
		// No usable prediction: the state rule.
		{name: "queue 3 + 2 sent since scrape = 5, at depth", eps: []sdk.Endpoint{gauged(fresh(3, 2, 0.5))}, room: []int{1}, waitMs: 0},
		{name: "queue 3 + 3 sent since scrape = 6, over depth", eps: []sdk.Endpoint{gauged(fresh(3, 3, 0.5))}, room: []int{0}, reason: ReasonEnginesFull, waitMs: -1},
		{name: "valid=false ignores its numbers", req: slo(450), eps: []sdk.Endpoint{{Prediction: sdk.Prediction{TTFTMs: 10}, State: fresh(9, 0, 0.1)}}, room: []int{0}, reason: ReasonEnginesFull, waitMs: -1},
		{name: "infinite TTFT is no prediction", req: slo(450), eps: []sdk.Endpoint{{Prediction: sdk.Prediction{Valid: true, TTFTMs: math.Inf(1)}, State: fresh(1, 0, 0.1)}}, room: []int{5}, waitMs: 0},
		// Mixed.
		{name: "predicted over SLO, state with room", req: slo(450), eps: []sdk.Endpoint{predicted(900), gauged(fresh(1, 0, 0.2))}, room: []int{0, 5}, waitMs: 0},
		{name: "predicted over SLO, state full", req: slo(450), eps: []sdk.Endpoint{predicted(900), gauged(fresh(6, 0, 0.2))}, room: []int{0, 0}, reason: ReasonAllFull, waitMs: 900},
		{name: "predicted within SLO, state full", req: slo(450), eps: []sdk.Endpoint{gauged(fresh(6, 0, 0.2)), predicted(300)}, room: []int{0, 1}, waitMs: 300},
		{name: "no endpoints", req: slo(450), room: []int{}, reason: ReasonNoEndpoints, waitMs: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewPredictedDetector()
			params := workedParams
			if tc.params != "" {
				params = tc.params
			}
			if err := d.Configure([]byte(params)); err != nil {
				t.Fatal(err)
			}
			v, err := d.Detect(context.Background(), &sdk.Cycle{Request: tc.req, Endpoints: tc.eps})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Room, tc.room) || v.Reason != tc.reason || v.WaitMs != tc.waitMs {
				t.Errorf("got room %v, reason %q, wait %v; want %v, %q, %v", v.Room, v.Reason, v.WaitMs, tc.room, tc.reason, tc.waitMs)
			}
		})
	}
}

func TestStateDetectorRules(t *testing.T) {
	cases := []struct {
		name   string
		params string
		eps    []sdk.Endpoint
		room   []int
	}{
		{name: "queue 2 at the default depth has one place, 1 has two", eps: []sdk.Endpoint{gauged(fresh(2, 0, 0.95)), gauged(fresh(1, 0, 0.5))}, room: []int{1, 2}},
		{name: "queue 1 + 2 sent since scrape is full", eps: []sdk.Endpoint{gauged(fresh(1, 2, 0.5))}, room: []int{0}},
		{name: "predictions are ignored", eps: []sdk.Endpoint{{State: fresh(3, 0, 0.1), Prediction: sdk.Prediction{Valid: true, TTFTMs: 1}}}, room: []int{0}},
		{name: "idle, fresh and empty: the queue depth", eps: []sdk.Endpoint{gauged(sdk.EndpointState{MetricsAgeMs: 10})}, room: []int{3}},
		{name: "KV over bound is full", params: `{"kvCacheUsage": 0.8}`, eps: []sdk.Endpoint{gauged(sdk.EndpointState{Running: 4, KVCacheUsage: 0.85, MetricsAgeMs: 50, InflightRequests: 4})}, room: []int{0}},
		{name: "KV over bound but idle takes one", params: `{"kvCacheUsage": 0.8}`, eps: []sdk.Endpoint{gauged(sdk.EndpointState{KVCacheUsage: 0.85, MetricsAgeMs: 50})}, room: []int{1}},
		{name: "stale gauges are ignored: one at a time", eps: []sdk.Endpoint{gauged(sdk.EndpointState{Waiting: 40, KVCacheUsage: 1, MetricsAgeMs: 300, InflightRequests: 10})}, room: []int{1}},
		{name: "gauges 200 ms old still count", eps: []sdk.Endpoint{gauged(sdk.EndpointState{Waiting: 40, MetricsAgeMs: 200, InflightRequests: 10})}, room: []int{0}},
		{name: "no in-flight bound by default", eps: []sdk.Endpoint{gauged(sdk.EndpointState{MetricsAgeMs: 10, InflightRequests: 10000})}, room: []int{3}},
		{name: "in-flight bound 100: 100 in flight is full on empty gauges", params: `{"maxInflight": 100}`, eps: []sdk.Endpoint{gauged(sdk.EndpointState{MetricsAgeMs: 10, InflightRequests: 100})}, room: []int{0}},
		{name: "in-flight bound 100: 97 on stale gauges leaves 3", params: `{"maxInflight": 100}`, eps: []sdk.Endpoint{gauged(sdk.EndpointState{MetricsAgeMs: 1000, InflightRequests: 97})}, room: []int{3}},
		{name: "in-flight bound below the queue room", params: `{"maxInflight": 2}`, eps: []sdk.Endpoint{gauged(fresh(0, 1, 0))}, room: []int{1}},
		{name: "queue depth 0: only an empty queue has room", params: `{"queueDepth": 0}`, eps: []sdk.Endpoint{gauged(fresh(0, 0, 0.1)), gauged(fresh(1, 0, 0.1))}, room: []int{1, 0}},
		// A time bound of 100 ms: depth min(2, ⌊rate × 0.1⌋).
		{name: "time bound, 4.8 starts/s: depth 0", params: `{"maxQueueWaitMs": 100}`, eps: []sdk.Endpoint{withRate(fresh(0, 0, 0.1), 4.8), withRate(fresh(0, 1, 0.1), 4.8)}, room: []int{1, 0}},
		{name: "time bound, 15 starts/s: depth 1", params: `{"maxQueueWaitMs": 100}`, eps: []sdk.Endpoint{withRate(fresh(1, 0, 0.1), 15), withRate(fresh(2, 0, 0.1), 15)}, room: []int{1, 0}},
		{name: "time bound, 44 starts/s: the queue depth binds", params: `{"maxQueueWaitMs": 100}`, eps: []sdk.Endpoint{withRate(fresh(2, 0, 0.1), 44)}, room: []int{1}},
		{name: "time bound, rate unknown: the queue depth", params: `{"maxQueueWaitMs": 100}`, eps: []sdk.Endpoint{gauged(fresh(2, 0, 0.1))}, room: []int{1}},
		{name: "time bound, idle: one anyway", params: `{"maxQueueWaitMs": 100}`, eps: []sdk.Endpoint{withRate(sdk.EndpointState{MetricsAgeMs: 10}, 1)}, room: []int{1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewStateDetector()
			if err := d.Configure([]byte(tc.params)); err != nil {
				t.Fatal(err)
			}
			v, err := d.Detect(context.Background(), &sdk.Cycle{Request: slo(100), Endpoints: tc.eps})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Room, tc.room) {
				t.Errorf("room %v, want %v", v.Room, tc.room)
			}
			if full := v.Saturated(); full != (v.Reason == ReasonEnginesFull) || v.WaitMs != map[bool]float64{true: -1, false: 0}[full] {
				t.Errorf("saturated %t with reason %q and wait %v", full, v.Reason, v.WaitMs)
			}
		})
	}
	v, _ := NewStateDetector().Detect(context.Background(), &sdk.Cycle{})
	if !v.Saturated() || v.Reason != ReasonNoEndpoints {
		t.Errorf("no endpoints: %+v", v)
	}
}

func TestDetectorParamsValidate(t *testing.T) {
	err := NewPredictedDetector().Configure([]byte(`{"ttftMargin": 11, "maxPredictedWaitMs": 0, "queueDepth": -1, "kvCacheUsage": 1.5, "maxMetricsAgeMs": 0, "maxInflight": -1, "maxQueueWaitMs": -5}`))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, field := range []string{"ttftMargin", "maxPredictedWaitMs", "queueDepth", "kvCacheUsage", "maxMetricsAgeMs", "maxInflight", "maxQueueWaitMs"} {
		if !strings.Contains(err.Error(), `"`+field+`"`) {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
	if err := NewStateDetector().Configure([]byte(`{"ttftMargin": 1}`)); err == nil || !strings.Contains(err.Error(), "ttftMargin") {
		t.Errorf("saturation-detector took the prediction rule's parameter: %v", err)
	}
}

// The router asks the detector at every decision while flow control is on: one allocation, the
// room counts.
func TestDetectAllocatesOnlyTheRoom(t *testing.T) {
	c := &sdk.Cycle{Request: slo(450), Endpoints: []sdk.Endpoint{predicted(900), gauged(fresh(6, 0, 0.2)), predicted(300)}}
	for _, d := range []sdk.Detector{NewStateDetector(), NewPredictedDetector()} {
		if n := testing.AllocsPerRun(100, func() { _, _ = d.Detect(context.Background(), c) }); n != 1 {
			t.Errorf("%s: Detect allocates %v times a call, want 1", d.Type(), n)
		}
	}
}

// Each cycle is judged by a new detector: one that had learned slots from the cycles before
// would judge the same cycle differently the second time.
func TestDetectorReads(t *testing.T) {
	type detector interface {
		sdk.Detector
		sdk.Reader
	}
	for _, d := range []func() detector{
		func() detector { return NewStateDetector() },
		func() detector { return NewPredictedDetector() },
	} {
		sdktest.CheckReads(t, d().Reads(), 200, func(c *sdk.Cycle) (sdk.SaturationVerdict, error) { return d().Detect(context.Background(), c) })
	}
}
