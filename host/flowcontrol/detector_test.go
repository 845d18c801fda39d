package flowcontrol

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

const ms = time.Millisecond

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

func TestDetectorRules(t *testing.T) {
	hundredMs := func(sdk.Request) time.Duration { return 100 * ms }
	slo := func(ttftMs float64) sdk.Request { return sdk.Request{SLO: sdk.SLO{TTFTMs: ttftMs}} }
	cases := []struct {
		name    string
		cfg     func(*DetectorConfig)
		req     sdk.Request
		eps     []sdk.Endpoint
		want    Saturation
		room    int
		wait    time.Duration
		unknown bool // the wait is not known
	}{
		// Valid predictions, SLO 450 ms × margin 1, or a wait within 500 ms.
		{name: "one of two within the SLO", req: slo(450), eps: []sdk.Endpoint{predicted(600), predicted(400)}, room: 1, wait: 400 * ms},
		{name: "at the SLO exactly has room", req: slo(450), eps: []sdk.Endpoint{predicted(450)}, room: 1, wait: 450 * ms},
		{name: "all over the SLO and the wait bound", req: slo(450), eps: []sdk.Endpoint{predicted(600), predicted(700)}, want: SaturationPredicted, wait: 600 * ms},
		{name: "over the SLO, wait 500 at the bound has room", req: slo(450), eps: []sdk.Endpoint{predicted(500)}, room: 1, wait: 500 * ms},
		{name: "margin 0.8 makes 400 over 360", cfg: func(c *DetectorConfig) { c.TTFTMargin, c.MaxPredictedWait = 0.8, 300*ms }, req: slo(450), eps: []sdk.Endpoint{predicted(400)}, want: SaturationPredicted, wait: 400 * ms},
		{name: "a loose SLO tolerates a long wait", req: slo(2000), eps: []sdk.Endpoint{predicted(1500)}, room: 1, wait: 1500 * ms},
		{name: "prefill comes off the wait, not the SLO test", cfg: func(c *DetectorConfig) { c.Prefill = hundredMs }, req: slo(450), eps: []sdk.Endpoint{predicted(700), predicted(300)}, room: 1, wait: 200 * ms},
		{name: "a prompt too long for its SLO goes when the wait is short", cfg: func(c *DetectorConfig) { c.Prefill = hundredMs }, req: slo(100), eps: []sdk.Endpoint{predicted(400)}, room: 1, wait: 300 * ms},
		// Idle endpoints have room whatever their prediction.
		{name: "idle: nothing in flight, fresh gauges empty", req: slo(450), eps: []sdk.Endpoint{{Prediction: sdk.Prediction{Valid: true, TTFTMs: 5000}, State: sdk.EndpointState{MetricsAgeMs: 50}}, predicted(900)}, room: 1, wait: 0},
		{name: "idle: nothing in flight, stale gauges", eps: []sdk.Endpoint{{Prediction: sdk.Prediction{Valid: true, TTFTMs: 5000}, State: sdk.EndpointState{Running: 3, MetricsAgeMs: 300}}}, room: 1, wait: 0},
		{name: "not idle: nothing in flight but the engine runs", eps: []sdk.Endpoint{{Prediction: sdk.Prediction{Valid: true, TTFTMs: 5000}, State: sdk.EndpointState{Running: 3, MetricsAgeMs: 50}}}, want: SaturationPredicted, wait: 5000 * ms},
		// No SLO: predicted wait (TTFT − prefill) within 500 ms.
		{name: "no SLO, wait 450 with prefill", cfg: func(c *DetectorConfig) { c.Prefill = hundredMs }, eps: []sdk.Endpoint{predicted(550)}, room: 1, wait: 450 * ms},
		{name: "no SLO, wait 600 with prefill", cfg: func(c *DetectorConfig) { c.Prefill = hundredMs }, eps: []sdk.Endpoint{predicted(700)}, want: SaturationPredicted, wait: 600 * ms},
		{name: "no SLO, no prefill: TTFT 500 is all wait, at the bound", eps: []sdk.Endpoint{predicted(500)}, room: 1, wait: 500 * ms},
		{name: "no SLO, no prefill: TTFT 501 over", eps: []sdk.Endpoint{predicted(501)}, want: SaturationPredicted, wait: 501 * ms},
		{name: "wait never below zero", cfg: func(c *DetectorConfig) { c.Prefill = hundredMs }, eps: []sdk.Endpoint{predicted(50)}, room: 1, wait: 0},
		// Invalid predictions: gauges while fresh, in-flight always.
		{name: "queue 3 + 2 sent since scrape = 5, at depth", eps: []sdk.Endpoint{gauged(fresh(3, 2, 0.5))}, room: 1, wait: 0},
		{name: "queue 3 + 3 sent since scrape = 6, over depth", eps: []sdk.Endpoint{gauged(fresh(3, 3, 0.5))}, want: SaturationEngines, unknown: true},
		{name: "KV at 0.8 has room", eps: []sdk.Endpoint{gauged(fresh(0, 0, 0.8))}, room: 1},
		{name: "KV 0.85 full", eps: []sdk.Endpoint{gauged(sdk.EndpointState{Running: 4, KVCacheUsage: 0.85, MetricsAgeMs: 50, InflightRequests: 4})}, want: SaturationEngines, unknown: true},
		{name: "stale gauges ignored", eps: []sdk.Endpoint{gauged(sdk.EndpointState{Waiting: 40, KVCacheUsage: 1, MetricsAgeMs: 300, InflightRequests: 10})}, room: 1},
		{name: "gauges 200 ms old still count", eps: []sdk.Endpoint{gauged(sdk.EndpointState{Waiting: 40, MetricsAgeMs: 200, InflightRequests: 10})}, want: SaturationEngines, unknown: true},
		{name: "100 in flight full despite empty gauges", eps: []sdk.Endpoint{gauged(sdk.EndpointState{MetricsAgeMs: 10, InflightRequests: 100})}, want: SaturationEngines, unknown: true},
		{name: "99 in flight on stale gauges has room", eps: []sdk.Endpoint{gauged(sdk.EndpointState{MetricsAgeMs: 1000, InflightRequests: 99})}, room: 1},
		{name: "valid=false ignores its numbers", req: slo(450), eps: []sdk.Endpoint{{Prediction: sdk.Prediction{TTFTMs: 10}, State: fresh(9, 0, 0.1)}}, want: SaturationEngines, unknown: true},
		{name: "infinite TTFT is no prediction", req: slo(450), eps: []sdk.Endpoint{{Prediction: sdk.Prediction{Valid: true, TTFTMs: math.Inf(1)}, State: fresh(1, 0, 0.1)}}, room: 1},
		// Mixed.
		{name: "predicted over SLO, fallback with room", req: slo(450), eps: []sdk.Endpoint{predicted(900), gauged(fresh(1, 0, 0.2))}, room: 1, wait: 0},
		{name: "predicted over SLO, fallback full", req: slo(450), eps: []sdk.Endpoint{predicted(900), gauged(fresh(6, 0, 0.2))}, want: SaturationMixed, wait: 900 * ms},
		{name: "predicted within SLO, fallback full", req: slo(450), eps: []sdk.Endpoint{gauged(fresh(6, 0, 0.2)), predicted(300)}, room: 1, wait: 300 * ms},
		{name: "both have room", eps: []sdk.Endpoint{predicted(100), gauged(fresh(0, 0, 0))}, room: 2, wait: 0},
		// None.
		{name: "no endpoints", req: slo(450), want: SaturationNoEndpoints, unknown: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := workedConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			d, err := NewDetector(cfg)
			if err != nil {
				t.Fatal(err)
			}
			v := d.Check(&sdk.Cycle{Request: tc.req, Endpoints: tc.eps})
			if v.Saturated != (tc.want != SaturationNone) || v.Reason != tc.want || v.Room != tc.room {
				t.Errorf("got %s, reason %s; want reason %s, room on %d", v, v.Reason, tc.want, tc.room)
			}
			if v.WaitKnown == tc.unknown || v.Wait != tc.wait {
				t.Errorf("got wait %s (known %t), want %s (known %t)", v.Wait, v.WaitKnown, tc.wait, !tc.unknown)
			}
			if v.Idle+v.ByPrediction+v.ByFallback != len(tc.eps) {
				t.Errorf("judged %d+%d+%d endpoints, want %d", v.Idle, v.ByPrediction, v.ByFallback, len(tc.eps))
			}
		})
	}
}

// workedConfig is the configuration TestDetectorRules' cases are worked out with: predictions on,
// llm-d's gauge thresholds (queue 5, KV 0.8, in flight 100).
func workedConfig() DetectorConfig {
	c := DefaultDetectorConfig()
	c.Predictions, c.QueueDepth, c.KVCacheUsage, c.MaxInflight = true, 5, 0.8, 100
	return c
}

// With predictions off (the default), every endpoint is judged by its gauges, Room says the same
// before the pipeline runs, and a prediction still estimates the wait of a full endpoint.
func TestDetectorGaugesOnly(t *testing.T) {
	d, err := NewDetector(DefaultDetectorConfig())
	if err != nil {
		t.Fatal(err)
	}
	busy := func(waiting int64, ttftMs float64) sdk.Endpoint {
		e := gauged(fresh(waiting, 0, 0.95)) // KV 0.95 is within the default bound 1
		e.Prediction = sdk.Prediction{Valid: true, TTFTMs: ttftMs}
		return e
	}
	// Queue 2 is at the default depth: room, though its prediction is far over the objective.
	eps := []sdk.Endpoint{busy(2, 5000), busy(3, 100)}
	v := d.Check(&sdk.Cycle{Request: sdk.Request{SLO: sdk.SLO{TTFTMs: 200}}, Endpoints: eps})
	if v.Saturated || v.Room != 1 || v.ByPrediction != 0 || v.ByFallback != 2 || v.Wait != 0 {
		t.Errorf("queues 2 and 3: %s", v)
	}
	restricted := &sdk.Cycle{Endpoints: slices.Clone(eps)}
	if !d.Restrict(restricted) || len(restricted.Endpoints) != 1 || restricted.Endpoints[0].Prediction.TTFTMs != 5000 {
		t.Errorf("Restrict kept %+v; want the queue-2 endpoint alone", restricted.Endpoints)
	}
	// Both full: saturated by the engines, and the wait is the least prediction.
	v = d.Check(&sdk.Cycle{Endpoints: []sdk.Endpoint{busy(4, 900), busy(3, 700)}})
	if !v.Saturated || v.Reason != SaturationEngines || !v.WaitKnown || v.Wait != 700*ms {
		t.Errorf("queues 4 and 3: %s", v)
	}
	// No in-flight bound by default: 10,000 of the router's requests on fresh, empty gauges.
	many := &sdk.Cycle{Endpoints: []sdk.Endpoint{gauged(sdk.EndpointState{MetricsAgeMs: 10, InflightRequests: 10000})}}
	if !d.Restrict(many) || len(many.Endpoints) != 1 {
		t.Error("an in-flight count alone made an endpoint full without maxInflight")
	}
	// Both full: Restrict leaves none and says so; with predictions on it leaves the cycle whole.
	full := &sdk.Cycle{Endpoints: []sdk.Endpoint{busy(4, 900), busy(3, 700)}}
	if d.Restrict(full) || len(full.Endpoints) != 0 {
		t.Errorf("Restrict on two full endpoints: kept %d", len(full.Endpoints))
	}
	pd, err := NewDetector(workedConfig())
	if err != nil {
		t.Fatal(err)
	}
	whole := &sdk.Cycle{Endpoints: []sdk.Endpoint{busy(4, 900), busy(3, 700)}}
	if !pd.Restrict(whole) || len(whole.Endpoints) != 2 {
		t.Errorf("Restrict with predictions on kept %d of 2", len(whole.Endpoints))
	}
}

func TestDetectorNilCycle(t *testing.T) {
	d, err := NewDetector(DefaultDetectorConfig())
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Check(nil); !v.Saturated || v.Reason != SaturationNoEndpoints {
		t.Errorf("nil cycle: got %s", v)
	}
}

func TestDetectorConfigValidate(t *testing.T) {
	bad := DetectorConfig{TTFTMargin: 11, MaxPredictedWait: 0, QueueDepth: -1, KVCacheUsage: 1.5, MaxMetricsAge: -ms, MaxInflight: -1}
	_, err := NewDetector(bad)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, field := range []string{"ttftMargin", "maxPredictedWait", "queueDepth", "kvCacheUsage", "maxMetricsAge", "maxInflight"} {
		if !strings.Contains(err.Error(), field+" must be") { // maxInflight: "must be >= 0 (0: no bound)"
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
	nan := DefaultDetectorConfig()
	nan.TTFTMargin, nan.KVCacheUsage = math.NaN(), math.NaN()
	if err := nan.Validate(); err == nil || !strings.Contains(err.Error(), "ttftMargin") || !strings.Contains(err.Error(), "kvCacheUsage") {
		t.Errorf("NaN bounds: got %v", err)
	}
	if err := DefaultDetectorConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// The detector runs for every request while flow control is on, so it must not allocate.
func TestDetectorCheckDoesNotAllocate(t *testing.T) {
	d, err := NewDetector(workedConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := &sdk.Cycle{Request: sdk.Request{SLO: sdk.SLO{TTFTMs: 450}}, Endpoints: []sdk.Endpoint{predicted(900), gauged(fresh(6, 0, 0.2)), predicted(300)}}
	if n := testing.AllocsPerRun(100, func() { d.Check(c) }); n != 0 {
		t.Errorf("Check allocates %v times a call, want 0", n)
	}
	g, err := NewDetector(DefaultDetectorConfig())
	if err != nil {
		t.Fatal(err)
	}
	roomy := &sdk.Cycle{Endpoints: []sdk.Endpoint{gauged(fresh(1, 0, 0.5)), gauged(fresh(0, 1, 0.5))}}
	if n := testing.AllocsPerRun(100, func() { g.Restrict(roomy) }); n != 0 || len(roomy.Endpoints) != 2 {
		t.Errorf("Restrict allocates %v times a call (kept %d of 2), want 0", n, len(roomy.Endpoints))
	}
}
