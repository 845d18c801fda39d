package pipeline_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
	"github.com/rs/zerolog"
)

// countingDetector is a detector stage that counts its calls.
type countingDetector struct {
	sdk.Detector
	sdk.Reader
	calls, endpoints atomic.Int64 // calls, and the endpoints they were asked about
}

func (d *countingDetector) Detect(ctx context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, error) {
	d.calls.Add(1)
	d.endpoints.Add(int64(len(c.Endpoints)))
	return d.Detector.Detect(ctx, c)
}

// flowPipeline is a pipeline whose detector slot is det (as plugin "sat" of type typ), in process.
func flowPipeline(t *testing.T, typ string, det sdk.Plugin) *pipeline.Pipeline {
	t.Helper()
	cfg, err := config.Parse("flow-test.yaml", []byte(`
plugins:
  - {name: sat, type: `+typ+`}
  - {name: pick, type: max-score-picker}
pipeline:
  picker: {pluginRef: pick}
  detector: {pluginRef: sat}
flowControl: {enabled: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.BuildInProcess(context.Background(), cfg, map[string]sdk.Plugin{"sat": det}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// A detector that reads endpoint state only is asked once a scrape: until an endpoint's next
// scrape (and for at most 50 ms) its count is reused less the requests sent there since.
func TestStateDetectorVerdictIsCachedUntilTheNextScrape(t *testing.T) {
	inner := flowpolicy.NewStateDetector() // queue depth 2
	det := &countingDetector{Detector: inner, Reader: inner}
	p := flowPipeline(t, flowpolicy.StateDetectorType, det)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	// Two endpoints scraped at t0 − 10 ms: a is empty (room 3: the queue depth + 1), b has 2
	// waiting (room 1).
	// ageA and ageB are each endpoint's metrics age at the cycle's time, which places its scrape.
	cycle := func(at time.Duration, ageA, ageB float64, sentA, sentB int64) *sdk.Cycle {
		return &sdk.Cycle{Now: t0.Add(at), Endpoints: []sdk.Endpoint{
			{ID: "a", State: sdk.EndpointState{MetricsAgeMs: ageA, DispatchedSinceScrape: sentA, InflightRequests: sentA}},
			{ID: "b", State: sdk.EndpointState{Waiting: 2, Running: 4, MetricsAgeMs: ageB, DispatchedSinceScrape: sentB, InflightRequests: 6 + sentB}},
		}}
	}
	ms := time.Millisecond
	steps := []struct {
		name             string
		c                *sdk.Cycle
		room             []int
		calls, endpoints int64 // the plugin's, so far
		saturated        string
	}{
		{"first: the plugin on both", cycle(0, 10, 10, 0, 0), []int{3, 1}, 1, 2, ""},
		{"5 ms later, same scrapes, one sent to a: cached", cycle(5*ms, 15, 15, 1, 0), []int{2, 1}, 1, 2, ""},
		{"then one to b too: cached, b full", cycle(6*ms, 16, 16, 1, 1), []int{2, 0}, 1, 2, ""},
		{"a's request finished: its room is back", cycle(7*ms, 17, 17, 0, 1), []int{3, 0}, 1, 2, ""},
		{"a new scrape of b: the plugin on b alone", cycle(12*ms, 22, 1, 0, 0), []int{3, 1}, 2, 3, ""},
		{"three to a, one to b: all room used, from the cache", cycle(13*ms, 23, 2, 3, 1), []int{0, 0}, 2, 3, "room-used"},
		{"a new scrape of both: the plugin on both", cycle(20*ms, 2, 2, 0, 0), []int{3, 1}, 3, 5, ""},
		{"the same scrapes 60 ms later: too old to reuse", cycle(80*ms, 62, 62, 0, 0), []int{3, 1}, 4, 7, ""},
	}
	for _, s := range steps {
		v, st := p.Detect(context.Background(), s.c)
		if !slices.Equal(v.Room, s.room) || det.calls.Load() != s.calls || det.endpoints.Load() != s.endpoints || st.Plugin != "sat" {
			t.Errorf("%s: room %v after %d calls on %d endpoints (by %q), want %v after %d on %d",
				s.name, v.Room, det.calls.Load(), det.endpoints.Load(), st.Plugin, s.room, s.calls, s.endpoints)
		}
		if s.saturated != "" && (!v.Saturated() || v.Reason != s.saturated || v.WaitMs >= 0) {
			t.Errorf("%s: %+v, want saturated (%s) with an unknown wait", s.name, v, s.saturated)
		}
	}
	if !p.DetectsBefore(&sdk.Request{}) {
		t.Error("a state detector is not asked before the pipeline")
	}
}

// A detector that reads the request or the predictions is asked at every decision, after the
// pipeline.
func TestPredictedDetectorIsNotCached(t *testing.T) {
	inner := flowpolicy.NewPredictedDetector()
	det := &countingDetector{Detector: inner, Reader: inner}
	p := flowPipeline(t, flowpolicy.PredictedDetectorType, det)
	c := &sdk.Cycle{Now: time.Unix(100, 0), Endpoints: []sdk.Endpoint{{ID: "a", State: sdk.EndpointState{MetricsAgeMs: 10}}}}
	for range 3 {
		p.Detect(context.Background(), c)
	}
	if det.calls.Load() != 3 || p.DetectsBefore(&sdk.Request{}) {
		t.Errorf("%d calls for 3 decisions (before the pipeline: %t); want 3, after", det.calls.Load(), p.DetectsBefore(&sdk.Request{}))
	}
}

// The detector slot takes arms like any slot: each request's session picks its detector, and
// the trace names the arm's plugin.
func TestDetectorArms(t *testing.T) {
	cfg, err := config.Parse("flow-arms.yaml", []byte(`
plugins:
  - {name: pick, type: max-score-picker}
  - {name: strict, type: saturation-detector, parameters: {queueDepth: 0}}
  - {name: loose, type: saturation-detector, parameters: {queueDepth: 4}}
pipeline:
  picker: {pluginRef: pick}
  detector:
    arms:
      - {name: strict, pluginRef: strict}
      - {name: loose, pluginRef: loose}
flowControl: {enabled: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.BuildInProcess(context.Background(), cfg, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rooms := map[string]int{} // arm plugin → the room it gave
	for i := range 40 {
		c := &sdk.Cycle{Now: time.Unix(100, 0), Request: sdk.Request{ID: "r", SessionID: "s" + strconv.Itoa(i)}, Endpoints: []sdk.Endpoint{
			{ID: "a", State: sdk.EndpointState{Waiting: 1, Running: 3, InflightRequests: 4, MetricsAgeMs: 10}}}}
		v, st := p.Detect(context.Background(), c)
		if prev, seen := rooms[st.Plugin]; seen && prev != v.Room[0] {
			t.Fatalf("arm %s gave room %d and %d", st.Plugin, prev, v.Room[0])
		}
		rooms[st.Plugin] = v.Room[0]
	}
	if len(rooms) != 2 || rooms["strict"] != 0 || rooms["loose"] != 4 {
		t.Errorf("rooms by arm %v, want strict 0 and loose 4", rooms)
	}
	if slot, arms, ok := p.Experiment(); !ok || slot != "detector" || !slices.Equal(arms, []string{"strict", "loose"}) {
		t.Errorf("experiment %q %v %t", slot, arms, ok)
	}
}

// A shadow is refused at flow control's slots: the shadow report compares picks.
func TestFlowSlotsRefuseAShadow(t *testing.T) {
	for _, slot := range []string{"detector", "order"} {
		typ := map[string]string{"detector": "saturation-detector", "order": "slo-order"}[slot]
		_, err := config.Parse("flow-shadow.yaml", []byte(`
plugins:
  - {name: pick, type: max-score-picker}
  - {name: a, type: `+typ+`}
  - {name: b, type: `+typ+`}
pipeline:
  picker: {pluginRef: pick}
  `+slot+`: {pluginRef: a, shadow: {pluginRef: b}}
`))
		if err == nil || !strings.Contains(err.Error(), "flow control's "+slot+" slot takes arms, not a shadow") {
			t.Errorf("%s with a shadow: %v", slot, err)
		}
	}
}
