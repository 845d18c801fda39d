package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/flowcontrol"
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
	if !f.Enabled || f.Policy != flowcontrol.PolicySLOFeasible || f.FlowKey != config.FlowKeyUser {
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
	d := f.DetectorConfig()
	def := flowcontrol.DefaultDetectorConfig()
	if d.MaxPredictedWait != 200*time.Millisecond || d.QueueDepth != 2 || d.KVCacheUsage != def.KVCacheUsage || d.MaxInflight != def.MaxInflight {
		t.Errorf("detector %+v", d)
	}
	if err := q.Validate(); err != nil {
		t.Errorf("the queue refuses the section's config: %v", err)
	}
}

func TestFlowControlErrors(t *testing.T) {
	cases := map[string]string{
		"  policy: lifo":                                `flowControl.policy: must be one of`,
		"  flowKey: ip":                                 `flowControl.flowKey: must be one of`,
		"  default: {maxRequests: -1}":                  `flowControl.default.maxRequests: must be > 0, got -1`,
		"  bands: {1: {ttl: -1s}}":                      `flowControl.bands.1.ttl: must be > 0, got -1s`,
		"  noEndpointsTTL: -2s":                         `flowControl.noEndpointsTTL: must be > 0`,
		"  detector: {kvCacheUsage: 1.5}":               `kvCacheUsage must be in (0, 1], got 1.5`,
		"  detector: {ttftMargin: 20, maxInflight: -3}": `maxInflight must be >= 0 (0: no bound), got -3`,
	}
	for line, want := range cases {
		_, err := config.Parse("test.yaml", []byte(minimal+y("flowControl:", line)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", line, err, want)
		}
	}
}
