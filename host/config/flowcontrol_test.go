package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/flowcontrol"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
)

// minimal is a valid config without flow control; tests append a flowControl section.
var minimal = y(
	"plugins:",
	"  - {name: pick, type: max-score-picker}",
	"pipeline:",
	"  picker: {pluginRef: pick}",
)

func TestFlowControlSection(t *testing.T) {
	c, err := config.Parse("test.yaml", []byte(minimal+y(
		"flowControl:",
		"  enabled: true",
		"  policy: slo-feasible",
		"  flowKey: user",
		"  default: {maxRequests: 100, ttl: 5s}",
		"  bands:",
		"    -1: {maxRequests: 10}",
		"    2: {ttl: 20s, maxBytes: 1024}",
		"  detector: {maxPredictedWait: 200ms, queueDepth: 2}",
	)))
	if err != nil {
		t.Fatal(err)
	}
	f := c.FlowControl
	if !f.Enabled || f.Policy != flowpolicy.PolicySLOFeasible || f.FlowKey != config.FlowKeyUser {
		t.Errorf("section read as %+v", f)
	}
	q := f.Queue(func(time.Time) time.Duration { return 0 })
	// A band's unset fields come from default:, and default's from the package defaults.
	want := map[int]flowcontrol.Limits{
		-1: {MaxRequests: 10, MaxBytes: config.DefaultBandBytes, TTL: 5 * time.Second},
		2:  {MaxRequests: 100, MaxBytes: 1024, TTL: 20 * time.Second},
	}
	if q.Default != (flowcontrol.Limits{MaxRequests: 100, MaxBytes: config.DefaultBandBytes, TTL: 5 * time.Second}) {
		t.Errorf("default limits %+v", q.Default)
	}
	for p, l := range want {
		if q.Bands[p] != l {
			t.Errorf("band %d: %+v, want %+v", p, q.Bands[p], l)
		}
	}
	// The built-in stages the section configures, with the parameters their plugins take.
	if typ, params := f.BuiltinDetector(); typ != flowpolicy.StateDetectorType ||
		string(params) != `{"queueDepth":2,"kvCacheUsage":1,"maxMetricsAgeMs":200,"maxInflight":0,"maxQueueWaitMs":100,"slotScrapes":4}` {
		t.Errorf("detector %s %s", typ, params)
	}
	f.Detector.Predictions = true
	if typ, params := f.BuiltinDetector(); typ != flowpolicy.PredictedDetectorType ||
		string(params) != `{"queueDepth":2,"kvCacheUsage":1,"maxMetricsAgeMs":200,"maxInflight":0,"maxQueueWaitMs":100,"slotScrapes":4,"ttftMargin":1,"maxPredictedWaitMs":200}` {
		t.Errorf("detector with predictions %s %s", typ, params)
	}
	if typ, params := f.BuiltinOrder(); typ != flowpolicy.OrderType || string(params) != `{"policy":"slo-feasible"}` {
		t.Errorf("order %s %s", typ, params)
	}
	if err := q.Validate(); err != nil {
		t.Errorf("the queue refuses the section's config: %v", err)
	}
}

func TestFlowControlErrors(t *testing.T) {
	cases := map[string]string{
		"  policy: lifo":                                `flowControl.policy: parameter "policy" must be one of`,
		"  flowKey: ip":                                 `flowControl.flowKey: must be one of`,
		"  candidates: some":                            `flowControl.candidates: must be "room" or "all", got "some"`,
		"  default: {maxRequests: -1}":                  `flowControl.default.maxRequests: must be > 0, got -1`,
		"  bands: {1: {ttl: -1s}}":                      `flowControl.bands.1.ttl: must be > 0, got -1s`,
		"  noEndpointsTTL: -2s":                         `flowControl.noEndpointsTTL: must be > 0`,
		"  detector: {kvCacheUsage: 1.5}":               `flowControl.detector: parameter "kvCacheUsage" must be in (0, 1], got 1.5`,
		"  detector: {ttftMargin: 20, maxInflight: -3}": `parameter "maxInflight" must be in [0, 1e+06], got -3`,
	}
	for line, want := range cases {
		_, err := config.Parse("test.yaml", []byte(minimal+y("flowControl:", line)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", line, err, want)
		}
	}
}
