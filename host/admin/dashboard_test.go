package admin

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/prometheus/client_golang/prometheus"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestSamplesKeepTheLastPairs(t *testing.T) {
	s := NewSamples(3)
	predicted := sdk.Prediction{Valid: true, TTFTMs: 100, TPOTMs: 20}
	// Five first-token samples (a TTFT pair each), then one finished request (a TPOT pair):
	// six pairs, of which the last three are kept.
	for i := range 5 {
		s.Add(sdk.Sample{EndpointID: "a", Predicted: predicted, ActualTTFTMs: float64(110 + i)}, t0.Add(time.Duration(i)*time.Second))
	}
	s.Add(sdk.Sample{EndpointID: "b", Predicted: predicted, ActualTPOTMs: 25, OutputTokens: 40}, t0.Add(5*time.Second))
	// Measures without a prediction to pair with: no producer, and a TPOT not learned yet.
	s.Add(sdk.Sample{EndpointID: "a", ActualTTFTMs: 90}, t0)
	s.Add(sdk.Sample{EndpointID: "a", Predicted: sdk.Prediction{Valid: true, TTFTMs: 80}, ActualTPOTMs: 30}, t0)

	v := s.View()
	if v.Capacity != 3 || v.Seen != 6 || v.Unpredicted != 2 || len(v.Points) != 3 {
		t.Fatalf("view %+v, want capacity 3, seen 6, unpredicted 2, 3 points", v)
	}
	want := []Point{
		{At: t0.Add(3 * time.Second), Endpoint: "a", Metric: "ttft", PredictedMs: 100, ActualMs: 113},
		{At: t0.Add(4 * time.Second), Endpoint: "a", Metric: "ttft", PredictedMs: 100, ActualMs: 114},
		{At: t0.Add(5 * time.Second), Endpoint: "b", Metric: "tpot", PredictedMs: 20, ActualMs: 25},
	}
	for i := range want {
		if v.Points[i] != want[i] {
			t.Errorf("point %d = %+v, want %+v (oldest first)", i, v.Points[i], want[i])
		}
	}
	if empty := NewSamples(0).View(); empty.Capacity != DefaultSamples || empty.Points == nil {
		t.Errorf("a fresh memory: %+v, want capacity %d and [] points", empty, DefaultSamples)
	}
}

func TestEventsRecordRestartsOnce(t *testing.T) {
	e := NewEvents(2)
	e.Restarts(map[string]int64{"producer": 0, "scorer": 0}, t0) // the first look: nothing restarted
	e.Restarts(map[string]int64{"producer": 1, "scorer": 0}, t0.Add(time.Second))
	e.Restarts(map[string]int64{"producer": 1, "scorer": 0}, t0.Add(2*time.Second)) // no change, no event
	e.Restarts(map[string]int64{"producer": 3, "scorer": 1}, t0.Add(3*time.Second)) // two plugins, in name order
	v := e.View()
	// Three restart events seen; the memory of two keeps the last two.
	if v.Seen != 3 || len(v.Items) != 2 {
		t.Fatalf("view %+v, want 3 seen and 2 kept", v)
	}
	if got := v.Items[0]; got.Source != "producer" || got.Kind != EventRestart || got.Detail != "3 restarts so far" || !got.At.Equal(t0.Add(3*time.Second)) {
		t.Errorf("first kept event %+v", got)
	}
	if got := v.Items[1]; got.Source != "scorer" || got.Detail != "1 restart so far" {
		t.Errorf("second kept event %+v", got)
	}
}

// experimentControl answers GET /admin/experiments with a report.
type experimentControl struct{ control }

func (*experimentControl) Experiments() (any, bool) {
	return map[string]any{"slot": "picker", "arms": []any{map[string]any{"name": "base"}}}, true
}

// TestDashboardJSON fills the router's real metrics and checks every part of the answer.
func TestDashboardJSON(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reqs, err := metrics.NewRequests(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{200, 200, 200, 429} {
		reqs.Observe(metrics.Request{Code: code})
	}
	gauges := []metrics.EndpointGauges{
		{ID: "b", Healthy: true, Running: 3, Waiting: 1, Inflight: 2, KVCacheUsage: 0.5},
		{ID: "a", Healthy: false, Ejected: true},
	}
	eps, err := metrics.NewEndpoints(reg, func() []metrics.EndpointGauges { return gauges })
	if err != nil {
		t.Fatal(err)
	}
	// Dispatches: a once, b twice, and "gone" (since removed from the list) once: 4 in all.
	for _, id := range []string{"a", "b", "b", "gone"} {
		eps.Dispatched(id)
	}
	stages, err := metrics.NewStages(reg, func() []*pluginhost.Plugin { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{time.Millisecond, 3 * time.Millisecond} {
		stages.Observe(&pipeline.Trace{Profile: "default",
			Picker: &pipeline.StageTrace{Stage: sdk.StagePicker, Plugin: "picker", Duration: d, Fallback: "deadline exceeded"}})
	}
	samples, events := NewSamples(10), NewEvents(10)
	samples.Add(sdk.Sample{EndpointID: "b", Predicted: sdk.Prediction{Valid: true, TTFTMs: 50}, ActualTTFTMs: 60}, t0)
	events.Add(Event{At: t0, Kind: EventReload, OK: false, Source: "POST /admin/reload", Detail: "no such file"})
	h := Handler(Options{Control: &experimentControl{}, Metrics: reg, Samples: samples, Events: events})

	code, body := do(t, h, "GET", "/admin/dashboard.json", "")
	var d Dashboard
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil {
		t.Fatalf("GET /admin/dashboard.json: %d %v\n%s", code, err, body)
	}
	if d.Requests.Total != 4 || d.Requests.ByCode["200"] != 3 || d.Requests.ByCode["429"] != 1 {
		t.Errorf("requests %+v, want 4: 3 × 200, 1 × 429", d.Requests)
	}
	// The list is the endpoints the router has now, sorted; "gone" counts only in the shares' total.
	wantEps := []EndpointView{
		{ID: "a", Healthy: false, Ejected: true, Requests: 1, Share: 0.25},
		{ID: "b", Healthy: true, Inflight: 2, Waiting: 1, Running: 3, KVCacheUsage: 0.5, Requests: 2, Share: 0.5},
	}
	if len(d.Endpoints) != 2 || d.Endpoints[0] != wantEps[0] || d.Endpoints[1] != wantEps[1] {
		t.Errorf("endpoints %+v, want %+v", d.Endpoints, wantEps)
	}
	// Two picker calls of 1 and 3 ms: mean 2 ms; p95 interpolated in the bucket (1.6 ms, 3.2 ms].
	if len(d.Stages) != 1 || d.Stages[0].Stage != "picker" || d.Stages[0].Calls != 2 || math.Abs(d.Stages[0].MeanMs-2) > 1e-9 ||
		d.Stages[0].P95Ms <= 1.6 || d.Stages[0].P95Ms > 3.2 {
		t.Errorf("stages %+v", d.Stages)
	}
	if len(d.Fallbacks) != 1 || d.Fallbacks[0] != (FallbackView{Profile: "default", Stage: "picker", Reason: pipeline.FallbackTimeout, Count: 2}) {
		t.Errorf("fallbacks %+v", d.Fallbacks)
	}
	if d.Predictions.Seen != 1 || len(d.Predictions.Points) != 1 || d.Predictions.Points[0].ActualMs != 60 {
		t.Errorf("predictions %+v", d.Predictions)
	}
	if len(d.Events.Items) != 1 || d.Events.Items[0].OK || d.Events.Items[0].Detail != "no such file" {
		t.Errorf("events %+v", d.Events)
	}
	if x, _ := d.Experiment.(map[string]any); x["slot"] != "picker" {
		t.Errorf("experiment %v, want GET /admin/experiments' report", d.Experiment)
	}
	if d.At.IsZero() || len(d.Errors) != 0 {
		t.Errorf("at %v, errors %v", d.At, d.Errors)
	}
}

// TestDashboardEmpty: a router before any request, without memories or an experiment, still
// answers every field, with [] rather than null where the page iterates.
func TestDashboardEmpty(t *testing.T) {
	h := Handler(Options{Control: &control{}, Metrics: prometheus.NewRegistry()})
	code, body := do(t, h, "GET", "/admin/dashboard.json", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	for _, want := range []string{`"endpoints": []`, `"stages": []`, `"fallbacks": []`, `"points": []`, `"items": []`,
		`"experiment": null`, `"by_code": {}`, `"capacity": 500`, `"capacity": 100`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
}

func TestPage(t *testing.T) {
	h := Handler(Options{Control: &control{}, Metrics: prometheus.NewRegistry(), Token: "s3cret-admin-token"})
	r := do2(t, h, "/dashboard")
	if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(r.header.Get("Content-Security-Policy"), "connect-src 'self'") {
		t.Fatalf("GET /dashboard: %d %v", r.code, r.header)
	}
	// The ids the browser test and operators' scripts rely on.
	for _, id := range []string{"requests-total", "endpoints", "scatter-ttft", "scatter-tpot", "stages", "fallbacks", "arms", "timeline"} {
		if !strings.Contains(r.body, `id="`+id+`"`) {
			t.Errorf("the page has no element %q", id)
		}
	}
	// No resource from elsewhere: the page must work with the admin listener alone.
	for _, bad := range []string{"http://", "https://", "<link", "src="} {
		if strings.Contains(strings.ReplaceAll(r.body, "http://www.w3.org/2000/svg", ""), bad) {
			t.Errorf("the page refers to an outside resource: %q", bad)
		}
	}
}

type response struct {
	code   int
	header http.Header
	body   string
}

// do2 is do for a GET whose headers matter.
func do2(t *testing.T, h http.Handler, path string) response {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return response{w.Code, w.Header(), w.Body.String()}
}
