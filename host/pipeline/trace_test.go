package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/google/go-cmp/cmp"
)

// decode marshals tr and decodes it generically, as a consumer of /debug/decisions would; the
// candidates are returned apart, decoded as endpoints.
func decode(t *testing.T, tr *pipeline.Trace) (map[string]any, []sdk.Endpoint) {
	t.Helper()
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("Unmarshal %s: %v", b, err)
	}
	var raw struct{ Candidates []sdk.Endpoint }
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("Unmarshal candidates: %v", err)
	}
	delete(m, "candidates")
	return m, raw.Candidates
}

func stageTrace(stage sdk.Stage, plugin string, us int) pipeline.StageTrace {
	return pipeline.StageTrace{Stage: stage, Plugin: plugin, Type: "test-" + stage.String(), Duration: time.Duration(us) * time.Microsecond}
}

// goldenTrace is a cycle over a, b, c, d: filter no-d keeps a, b, c, filter sticky keeps b, c,
// two weighted scorers rate b and c, and the picker orders c before b.
func goldenTrace() *pipeline.Trace {
	eps := []sdk.Endpoint{
		{ID: "a", State: sdk.EndpointState{Waiting: 3}, Prediction: sdk.Prediction{Valid: true, TTFTMs: 100}},
		{ID: "b", State: sdk.EndpointState{KVCacheUsage: 0.5}, Prediction: sdk.Prediction{Valid: true, TTFTMs: 200}},
		{ID: "c", Labels: map[string]string{"zone": "x"}, Prediction: sdk.Prediction{Valid: true, TTFTMs: 300, TPOTMs: 20}},
		{ID: "d"},
	}
	tr := &pipeline.Trace{
		RequestID: "req-1", Seed: 42, Now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Candidates: eps,
		Admitted: true, Order: []int{2, 1}, Scored: []int{1, 2}, Duration: 2 * time.Millisecond,
	}
	prod := stageTrace(sdk.StageProducer, "predict", 1500)
	tr.Producer = &prod
	f1, f2 := stageTrace(sdk.StageFilter, "no-d", 20), stageTrace(sdk.StageFilter, "sticky", 30)
	f1.Kept, f1.Reason = []int{0, 1, 2}, "d is slow" // a, b, c
	f2.Kept = []int{1, 2}                            // b, c
	tr.Filters = []pipeline.StageTrace{f1, f2}
	s1, s2 := stageTrace(sdk.StageScorer, "s1", 40), stageTrace(sdk.StageScorer, "s2", 50)
	s1.Weight, s1.Scores = 2, []float64{0.2, 0.8} // b, c
	s2.Weight, s2.Scores, s2.Fallback = 1, []float64{1, 0}, "stage error: boom"
	tr.Scorers = []pipeline.StageTrace{s1, s2}
	tr.Scores = []float64{1.4, 1.6} // b: 0.2×2 + 1×1 = 1.4; c: 0.8×2 + 0×1 = 1.6
	adm := stageTrace(sdk.StageAdmitter, "adm", 60)
	adm.Admitted, adm.Reason = true, "has headroom"
	tr.Admitter = &adm
	pick := stageTrace(sdk.StagePicker, "pick", 70)
	pick.Order = []int{2, 1} // c, b
	tr.Picker = &pick
	return tr
}

func TestTraceJSONGolden(t *testing.T) {
	tr := goldenTrace()
	got, candidates := decode(t, tr)
	want := map[string]any{
		"request_id": "req-1", "seed": 42.0, "now": "2025-01-02T03:04:05Z", "duration_us": 2000.0,
		"outcome": "picked",
		"order":   []any{"c", "b"},
		"scores":  map[string]any{"b": 1.4, "c": 1.6},
		"stages": []any{
			map[string]any{"stage": "producer", "plugin": "predict", "type": "test-producer", "duration_us": 1500.0},
			map[string]any{"stage": "filter", "plugin": "no-d", "type": "test-filter", "duration_us": 20.0,
				"reason": "d is slow", "kept": []any{"a", "b", "c"}},
			map[string]any{"stage": "filter", "plugin": "sticky", "type": "test-filter", "duration_us": 30.0,
				"kept": []any{"b", "c"}},
			map[string]any{"stage": "scorer", "plugin": "s1", "type": "test-scorer", "duration_us": 40.0,
				"weight": 2.0, "scores": map[string]any{"b": 0.2, "c": 0.8}},
			map[string]any{"stage": "scorer", "plugin": "s2", "type": "test-scorer", "duration_us": 50.0,
				"weight": 1.0, "scores": map[string]any{"b": 1.0, "c": 0.0}, "fallback": "stage error: boom"},
			map[string]any{"stage": "admitter", "plugin": "adm", "type": "test-admitter", "duration_us": 60.0,
				"admitted": true, "reason": "has headroom"},
			map[string]any{"stage": "picker", "plugin": "pick", "type": "test-picker", "duration_us": 70.0,
				"order": []any{"c", "b"}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trace JSON (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tr.Candidates, candidates); diff != "" {
		t.Errorf("candidates JSON (-want +got):\n%s", diff)
	}
}

func TestTraceOutcome(t *testing.T) {
	tests := []struct {
		name     string
		admitted bool
		order    []int
		want     string
	}{
		{"picked", true, []int{1, 0}, "picked"},
		{"rejected though an order exists", false, []int{1, 0}, "rejected"},
		{"rejected without candidates", false, nil, "rejected"},
		{"nothing to pick", true, nil, "no candidates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &pipeline.Trace{Admitted: tt.admitted, Order: tt.order, Candidates: []sdk.Endpoint{{ID: "a"}, {ID: "b"}}}
			if got := tr.Outcome(); got != tt.want {
				t.Errorf("Outcome() = %q, want %q", got, tt.want)
			}
			m, _ := decode(t, tr)
			if m["outcome"] != tt.want {
				t.Errorf("JSON outcome %v, want %q", m["outcome"], tt.want)
			}
		})
	}
}

func TestTraceJSONRejected(t *testing.T) {
	tr := goldenTrace()
	tr.Admitted, tr.Reason = false, "sheddable, no headroom"
	tr.Admitter.Admitted, tr.Admitter.Reason = false, "sheddable, no headroom"
	got, _ := decode(t, tr)
	if got["outcome"] != "rejected" || got["reason"] != "sheddable, no headroom" {
		t.Errorf("outcome %v reason %v, want rejected with the admitter's reason", got["outcome"], got["reason"])
	}
	// A rejection is spelled out: admitted is a pointer so false is not omitted.
	adm := got["stages"].([]any)[5].(map[string]any)
	if adm["admitted"] != false {
		t.Errorf("admitter stage %v, want admitted: false", adm)
	}
}

func TestTraceJSONNoCandidates(t *testing.T) {
	tr := &pipeline.Trace{RequestID: "r", Admitted: true, Reason: "no endpoints"}
	got, candidates := decode(t, tr)
	want := map[string]any{
		"request_id": "r", "seed": 0.0, "now": "0001-01-01T00:00:00Z", "duration_us": 0.0,
		"outcome": "no candidates", "reason": "no endpoints", "order": []any{}, "stages": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" || len(candidates) != 0 {
		t.Errorf("trace JSON (-want +got):\n%s\ncandidates %v", diff, candidates)
	}
}

// A request that waited in the flow control queue carries its wait and the detector's verdict
// at dispatch; one that did not has neither field.
func TestTraceJSONFlowWait(t *testing.T) {
	tr := goldenTrace()
	tr.FlowWait, tr.FlowVerdict = 1500*time.Microsecond, "room on 1"
	got, _ := decode(t, tr)
	if got["flow_wait_ms"] != 1.5 || got["flow_verdict"] != "room on 1" {
		t.Errorf("flow_wait_ms %v flow_verdict %v, want 1.5 and the verdict", got["flow_wait_ms"], got["flow_verdict"])
	}
	got, _ = decode(t, goldenTrace())
	if _, ok := got["flow_wait_ms"]; ok {
		t.Errorf("a trace that did not queue has flow_wait_ms %v", got["flow_wait_ms"])
	}
}

// Through Run: the JSON lists the stages in the order they ran, whatever order their traces
// were filled in (the admitter finishes concurrently).
func TestTraceJSONFromRun(t *testing.T) {
	p := build(t, "1s",
		picker("pick", func(context.Context, *sdk.Cycle, []float64) ([]int, error) { return []int{2, 1}, nil }),
		admitter("adm", func(context.Context, *sdk.Cycle) (sdk.AdmitVerdict, error) {
			return sdk.AdmitVerdict{Admitted: true}, nil
		}),
		scorer("s", "3", byID(map[string]float64{"a": 0.5, "b": 0.25})),
		filter("all", keepIDs("a", "b", "c")),
		producer("predict", func(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
			return make([]sdk.Prediction, len(c.Endpoints)), nil
		}))
	got, candidates := decode(t, p.Run(context.Background(), testCycle()))
	var stages []string
	for _, s := range got["stages"].([]any) {
		stages = append(stages, s.(map[string]any)["stage"].(string)+":"+s.(map[string]any)["plugin"].(string))
	}
	if diff := cmp.Diff([]string{"producer:predict", "filter:all", "scorer:s", "admitter:adm", "picker:pick"}, stages); diff != "" {
		t.Errorf("stage order (-want +got):\n%s", diff)
	}
	// a: 3 × 0.5 = 1.5, b: 3 × 0.25 = 0.75, c: 3 × 0 = 0
	want := map[string]any{"a": 1.5, "b": 0.75, "c": 0.0}
	if diff := cmp.Diff(want, got["scores"]); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"c", "b"}, got["order"]); diff != "" || got["outcome"] != "picked" {
		t.Errorf("outcome %v, order (-want +got):\n%s", got["outcome"], diff)
	}
	if len(candidates) != 3 || candidates[2].ID != "c" {
		t.Errorf("candidates %+v, want a, b, c", candidates)
	}
}
