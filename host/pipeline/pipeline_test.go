package pipeline_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRunFullChain(t *testing.T) {
	j := &journal{}
	c := testCycle()
	c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: "d"})
	p := build(t, "1s",
		producer("predict", func(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
			j.note("predict", c, nil)
			out := make([]sdk.Prediction, len(c.Endpoints))
			for i := range out {
				out[i] = sdk.Prediction{Valid: true, TTFTMs: float64(100 * (i + 1))}
			}
			return out, nil
		}),
		filter("no-a", func(ctx context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
			j.note("no-a", c, nil)
			return keepIDs("b", "c", "d")(ctx, c)
		}),
		filter("no-d", func(ctx context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
			j.note("no-d", c, nil)
			v, err := keepIDs("b", "c")(ctx, c)
			v.Reason = "d is slow"
			return v, err
		}),
		scorer("s1", "2", func(ctx context.Context, c *sdk.Cycle) ([]float64, error) {
			j.note("s1", c, nil)
			return byID(map[string]float64{"b": 0.2, "c": 0.8})(ctx, c)
		}),
		scorer("s2", "", func(ctx context.Context, c *sdk.Cycle) ([]float64, error) {
			j.note("s2", c, nil)
			return byID(map[string]float64{"b": 1, "c": 0})(ctx, c)
		}),
		picker("first-listed", func(_ context.Context, c *sdk.Cycle, scores []float64) ([]int, error) {
			j.note("first-listed", c, scores)
			return []int{0, 1}, nil // b before c although c scores higher: the picker decides
		}),
	)
	tr := p.Run(context.Background(), c)

	if len(j.order) != 6 || j.order[0] != "predict" || j.order[1] != "no-a" || j.order[2] != "no-d" ||
		!slices.Contains(j.order[3:5], "s1") || !slices.Contains(j.order[3:5], "s2") || j.order[5] != "first-listed" {
		t.Errorf("stages ran as %q, want predict, no-a, no-d, {s1, s2}, first-listed", j.order)
	}
	ids := func(eps []sdk.Endpoint) (out []string) {
		for _, e := range eps {
			out = append(out, fmt.Sprintf("%s:%v/%g", e.ID, e.Prediction.Valid, e.Prediction.TTFTMs))
		}
		return out
	}
	saw := map[string][]string{ // the producer's predictions travel with the endpoints
		"predict": {"a:false/0", "b:false/0", "c:false/0", "d:false/0"},
		"no-a":    {"a:true/100", "b:true/200", "c:true/300", "d:true/400"},
		"no-d":    {"b:true/200", "c:true/300", "d:true/400"},
		"s1":      {"b:true/200", "c:true/300"}, "s2": {"b:true/200", "c:true/300"},
		"first-listed": {"b:true/200", "c:true/300"},
	}
	for name, want := range saw {
		if got := ids(j.saw[name]); !slices.Equal(got, want) {
			t.Errorf("%s saw %q, want %q", name, got, want)
		}
	}
	// b: 0.2×2 + 1×1 = 1.4; c: 0.8×2 + 0×1 = 1.6
	if diff := cmp.Diff([]float64{1.4, 1.6}, j.score["first-listed"], approx); diff != "" {
		t.Errorf("picker's scores (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{1.4, 1.6}, tr.Scores, approx); diff != "" {
		t.Errorf("trace scores (-want +got):\n%s", diff)
	}
	if got := ids(tr.Candidates); !slices.Equal(got, saw["no-a"]) {
		t.Errorf("candidates %q, want %q", got, saw["no-a"])
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"outcome", tr.Outcome(), "picked"},
		{"order", tr.OrderIDs(), []string{"b", "c"}},
		{"order indices", tr.Order, []int{1, 2}},
		{"scored", tr.Scored, []int{1, 2}},
		{"no-a kept", tr.Filters[0].Kept, []int{1, 2, 3}},
		{"no-d kept", tr.Filters[1].Kept, []int{1, 2}}, // candidate positions, not positions in its input
		{"no-d reason", tr.Filters[1].Reason, "d is slow"},
		{"weights", []float64{tr.Scorers[0].Weight, tr.Scorers[1].Weight}, []float64{2, 1}},
		{"s1 scores", tr.Scorers[0].Scores, []float64{0.2, 0.8}},
		{"picker", tr.Picker.Plugin + "/" + tr.Picker.Type, "first-listed/test-picker"},
		{"picker order", tr.Picker.Order, []int{1, 2}},
		{"request", tr.RequestID, "req-1"},
	}
	for _, ck := range checks {
		if diff := cmp.Diff(ck.want, ck.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", ck.what, diff)
		}
	}
}

// counter counts a stage's calls.
func TestProducerFallback(t *testing.T) {
	const timeout = "20ms"
	tests := []struct {
		name     string
		f        producerFn
		fallback string
	}{
		{"error", func(context.Context, *sdk.Cycle) ([]sdk.Prediction, error) { return nil, boom }, "stage error: boom"},
		{"panic", func(context.Context, *sdk.Cycle) ([]sdk.Prediction, error) { panic("kaboom") }, "stage error: stage panicked: kaboom"},
		{"one prediction for three endpoints", func(context.Context, *sdk.Cycle) ([]sdk.Prediction, error) {
			return []sdk.Prediction{{Valid: true, TTFTMs: 1}}, nil
		}, "invalid answer: producer returned 1 predictions for 3 endpoints"},
		{"blocks past the deadline", func(ctx context.Context, _ *sdk.Cycle) ([]sdk.Prediction, error) {
			return block[[]sdk.Prediction](ctx)
		}, "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &journal{}
			p := build(t, "1s", producer("predict", tt.f).within(timeout),
				filter("look", func(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
					j.note("look", c, nil)
					return sdk.FilterVerdict{Kept: heuristics.AllIndices(len(c.Endpoints))}, nil
				}))
			tr := p.Run(context.Background(), testCycle())
			if tr.Producer == nil || tr.Producer.Fallback != tt.fallback {
				t.Fatalf("producer trace %+v, want fallback %q", tr.Producer, tt.fallback)
			}
			for _, eps := range [][]sdk.Endpoint{tr.Candidates, j.saw["look"]} {
				for _, e := range eps {
					if e.Prediction != (sdk.Prediction{}) {
						t.Errorf("endpoint %s has prediction %+v, want none", e.ID, e.Prediction)
					}
				}
			}
			if tr.Outcome() != "picked" || len(tr.Order) != 3 {
				t.Errorf("outcome %q order %v, want picked with all three", tr.Outcome(), tr.Order)
			}
		})
	}
}

func TestFilterVerdicts(t *testing.T) {
	verdict := func(v sdk.FilterVerdict, err error) filterFn {
		return func(context.Context, *sdk.Cycle) (sdk.FilterVerdict, error) { return v, err }
	}
	tests := []struct {
		name     string
		f        filterFn
		kept     []int    // the trace's Kept, positions in the candidates a, b, c
		scored   []string // what the scorer saw
		order    []string // by score a 0.1, b 0.9, c 0.5, best first
		fallback string
		reason   string // the trace's
	}{
		{"keeps a and c", keepIDs("a", "c"), []int{0, 2}, []string{"a", "c"}, []string{"c", "a"}, "", ""},
		{"duplicate, unsorted indices normalised", verdict(sdk.FilterVerdict{Kept: []int{2, 0, 2, 0}}, nil),
			[]int{0, 2}, []string{"a", "c"}, []string{"c", "a"}, "", ""},
		{"error keeps all", verdict(sdk.FilterVerdict{Kept: []int{0}}, boom),
			[]int{0, 1, 2}, []string{"a", "b", "c"}, []string{"b", "c", "a"}, "stage error: boom", ""},
		{"panic keeps all", func(context.Context, *sdk.Cycle) (sdk.FilterVerdict, error) { panic("kaboom") },
			[]int{0, 1, 2}, []string{"a", "b", "c"}, []string{"b", "c", "a"}, "stage error: stage panicked: kaboom", ""},
		{"deadline keeps all", func(ctx context.Context, _ *sdk.Cycle) (sdk.FilterVerdict, error) {
			return block[sdk.FilterVerdict](ctx)
		}, []int{0, 1, 2}, []string{"a", "b", "c"}, []string{"b", "c", "a"}, "deadline exceeded", ""},
		{"keeps nothing", verdict(sdk.FilterVerdict{Reason: "all busy"}, nil),
			nil, nil, nil, "", "filter f kept no endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var after, scored counter
			j := &journal{}
			p := build(t, "1s", filter("f", tt.f).within("20ms"),
				filter("after", after.filter(keepIDs("a", "b", "c"))),
				scorer("s", "", scored.scorer(func(ctx context.Context, c *sdk.Cycle) ([]float64, error) {
					j.note("s", c, nil)
					return byID(map[string]float64{"a": 0.1, "b": 0.9, "c": 0.5})(ctx, c)
				})))
			tr := p.Run(context.Background(), testCycle())
			if got := tr.Filters[0]; !cmp.Equal(got.Kept, tt.kept, cmpopts.EquateEmpty()) || got.Fallback != tt.fallback {
				t.Errorf("filter trace kept %v fallback %q, want %v %q", got.Kept, got.Fallback, tt.kept, tt.fallback)
			}
			if got := endpointIDs(j.saw["s"]); !cmp.Equal(got, tt.scored, cmpopts.EquateEmpty()) {
				t.Errorf("scorer saw %v, want %v", got, tt.scored)
			}
			if got := tr.OrderIDs(); !cmp.Equal(got, tt.order, cmpopts.EquateEmpty()) {
				t.Errorf("order %v, want %v", got, tt.order)
			}
			if tr.Reason != tt.reason {
				t.Errorf("reason %q, want %q", tr.Reason, tt.reason)
			}
			if len(tt.kept) > 0 {
				return
			}
			// Nothing left: the later filter, the scorers and the picker are not asked.
			if tr.Outcome() != "no candidates" || after.n.Load() != 0 || scored.n.Load() != 0 || tr.Picker != nil || len(tr.Filters) != 1 {
				t.Errorf("outcome %q, later filter called %d×, scorer %d×, picker %+v, %d filter traces; want no candidates and no calls",
					tr.Outcome(), after.n.Load(), scored.n.Load(), tr.Picker, len(tr.Filters))
			}
		})
	}
}

func TestScorerAnswers(t *testing.T) {
	scores := func(v []float64, err error) scorerFn {
		return func(context.Context, *sdk.Cycle) ([]float64, error) { return v, err }
	}
	tests := []struct {
		name     string
		f        scorerFn
		want     []float64 // the scorer's clamped scores for a, b, c
		fallback string
	}{
		{"in range", scores([]float64{0, 0.25, 1}, nil), []float64{0, 0.25, 1}, ""},
		{"out of range clamped", scores([]float64{-0.5, 1.7, math.NaN()}, nil), []float64{0, 1, 0}, ""},
		{"infinities clamped", scores([]float64{math.Inf(1), math.Inf(-1), 0.5}, nil), []float64{1, 0, 0.5}, ""},
		{"error: composite", scores(nil, boom), composite, "stage error: boom"},
		{"two scores for three endpoints: composite", scores([]float64{1, 1}, nil), composite,
			"invalid answer: scorer returned 2 scores for 3 endpoints"},
		{"panic: composite", func(context.Context, *sdk.Cycle) ([]float64, error) { panic("kaboom") }, composite,
			"stage error: stage panicked: kaboom"},
		{"deadline: composite", func(ctx context.Context, _ *sdk.Cycle) ([]float64, error) { return block[[]float64](ctx) },
			composite, "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, "1s", scorer("s", "0.5", tt.f).within("20ms"))
			tr := p.Run(context.Background(), testCycle())
			st := tr.Scorers[0]
			if diff := cmp.Diff(tt.want, st.Scores, approx); diff != "" || st.Fallback != tt.fallback {
				t.Errorf("scorer fallback %q, want %q; scores (-want +got):\n%s", st.Fallback, tt.fallback, diff)
			}
			// Weighted by 0.5: e.g. composite b = 0.5 × 0.8 = 0.4.
			want := make([]float64, len(tt.want))
			for i, v := range tt.want {
				want[i] = 0.5 * v
			}
			if diff := cmp.Diff(want, tr.Scores, approx); diff != "" {
				t.Errorf("weighted scores (-want +got):\n%s", diff)
			}
		})
	}
}

// The only slot blocks; the pipeline-wide stageTimeout (20ms) ends it and the fallback applies.
func TestStageTimeoutFromPipeline(t *testing.T) {
	p := build(t, "20ms", scorer("slow", "", func(ctx context.Context, _ *sdk.Cycle) ([]float64, error) {
		return block[[]float64](ctx)
	}))
	tr := p.Run(context.Background(), testCycle())
	if st := tr.Scorers[0]; st.Fallback != "deadline exceeded" || !cmp.Equal(st.Scores, composite, approx) {
		t.Errorf("scorer trace %+v, want the composite fallback after its deadline", st)
	}
	if got := tr.OrderIDs(); !slices.Equal(got, []string{"b", "c", "a"}) { // composite 0.8 > 0.367 > 0.2
		t.Errorf("order %v, want [b c a]", got)
	}
}

func TestAdmitterVerdicts(t *testing.T) {
	verdict := func(v sdk.AdmitVerdict, err error) admitterFn {
		return func(context.Context, *sdk.Cycle) (sdk.AdmitVerdict, error) { return v, err }
	}
	tests := []struct {
		name            string
		f               admitterFn
		outcome, reason string // the trace's
		admitted        bool   // the admitter's trace
		admitterReason  string
		fallback        string
	}{
		{"admits", verdict(sdk.AdmitVerdict{Admitted: true, Reason: "has headroom"}, nil), "picked", "", true, "has headroom", ""},
		{"rejects", verdict(sdk.AdmitVerdict{Reason: "sheddable, no headroom"}, nil),
			"rejected", "sheddable, no headroom", false, "sheddable, no headroom", ""},
		{"error admits", verdict(sdk.AdmitVerdict{}, boom), "picked", "", true, "admitted by fallback", "stage error: boom"},
		{"panic admits", func(context.Context, *sdk.Cycle) (sdk.AdmitVerdict, error) { panic("kaboom") },
			"picked", "", true, "admitted by fallback", "stage error: stage panicked: kaboom"},
		{"deadline admits", func(ctx context.Context, _ *sdk.Cycle) (sdk.AdmitVerdict, error) { return block[sdk.AdmitVerdict](ctx) },
			"picked", "", true, "admitted by fallback", "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, "1s", admitter("adm", tt.f).within("20ms"),
				scorer("s", "", byID(map[string]float64{"a": 0.1, "b": 0.9, "c": 0.5})))
			tr := p.Run(context.Background(), testCycle())
			if tr.Outcome() != tt.outcome || tr.Reason != tt.reason || tr.Admitted != tt.admitted {
				t.Errorf("outcome %q reason %q admitted %v, want %q %q %v", tr.Outcome(), tr.Reason, tr.Admitted, tt.outcome, tt.reason, tt.admitted)
			}
			if a := tr.Admitter; a.Admitted != tt.admitted || a.Reason != tt.admitterReason || a.Fallback != tt.fallback {
				t.Errorf("admitter trace %+v, want admitted %v reason %q fallback %q", a, tt.admitted, tt.admitterReason, tt.fallback)
			}
			// The order is computed either way; a rejection wins over it.
			if got := tr.OrderIDs(); !slices.Equal(got, []string{"b", "c", "a"}) {
				t.Errorf("order %v, want [b c a]", got)
			}
		})
	}
}

func TestPickerAnswers(t *testing.T) {
	order := func(o []int, err error) pickerFn {
		return func(context.Context, *sdk.Cycle, []float64) ([]int, error) { return o, err }
	}
	maxScore := []string{"b", "c", "a"} // scores a 0.1, b 0.9, c 0.5
	tests := []struct {
		name             string
		pick             *stageSpec // nil: no picker configured
		want             []string
		plugin, fallback string
	}{
		{"picker's order", ptr(picker("pick", order([]int{2, 0, 1}, nil))), []string{"c", "a", "b"}, "pick", ""},
		{"duplicates removed", ptr(picker("pick", order([]int{2, 2, 0, 2}, nil))), []string{"c", "a"}, "pick", ""},
		{"error: max-score", ptr(picker("pick", order([]int{2}, boom))), maxScore, "pick", "stage error: boom"},
		{"empty: max-score", ptr(picker("pick", order(nil, nil))), maxScore, "pick", "invalid answer: picker returned an empty order"},
		{"panic: max-score", ptr(picker("pick", func(context.Context, *sdk.Cycle, []float64) ([]int, error) { panic("kaboom") })),
			maxScore, "pick", "stage error: stage panicked: kaboom"},
		{"deadline: max-score", ptr(picker("pick", func(ctx context.Context, _ *sdk.Cycle, _ []float64) ([]int, error) {
			return block[[]int](ctx)
		}).within("20ms")), maxScore, "pick", "deadline exceeded"},
		{"no picker: max-score", nil, maxScore, "default", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs := []stageSpec{scorer("s", "", byID(map[string]float64{"a": 0.1, "b": 0.9, "c": 0.5}))}
			if tt.pick != nil {
				specs = append(specs, *tt.pick)
			}
			tr := build(t, "1s", specs...).Run(context.Background(), testCycle())
			if got := tr.OrderIDs(); !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
			if tr.Picker.Plugin != tt.plugin || tr.Picker.Fallback != tt.fallback || !slices.Equal(tr.Picker.Order, tr.Order) {
				t.Errorf("picker trace %+v, want plugin %q fallback %q order %v", tr.Picker, tt.plugin, tt.fallback, tr.Order)
			}
		})
	}
}

func TestZeroEndpoints(t *testing.T) {
	tests := []struct {
		name            string
		verdict         sdk.AdmitVerdict
		outcome, reason string
	}{
		{"admitted", sdk.AdmitVerdict{Admitted: true}, "no candidates", "no endpoints"},
		{"rejected", sdk.AdmitVerdict{Reason: "over budget"}, "rejected", "over budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var filtered, scored counter
			p := build(t, "1s", filter("f", filtered.filter(keepIDs())), scorer("s", "", scored.scorer(byID(nil))),
				admitter("adm", func(context.Context, *sdk.Cycle) (sdk.AdmitVerdict, error) { return tt.verdict, nil }))
			c := testCycle()
			c.Endpoints = nil
			tr := p.Run(context.Background(), c)
			if tr.Outcome() != tt.outcome || tr.Reason != tt.reason {
				t.Errorf("outcome %q reason %q, want %q %q", tr.Outcome(), tr.Reason, tt.outcome, tt.reason)
			}
			if filtered.n.Load() != 0 || scored.n.Load() != 0 || tr.Picker != nil || len(tr.Order) != 0 {
				t.Errorf("filter called %d×, scorer %d×, picker %+v, order %v; want no stage but the admitter",
					filtered.n.Load(), scored.n.Load(), tr.Picker, tr.Order)
			}
		})
	}
}

func TestRunLeavesInputAlone(t *testing.T) {
	p := build(t, "1s",
		producer("predict", func(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
			return slices.Repeat([]sdk.Prediction{{Valid: true, TTFTMs: 9}}, len(c.Endpoints)), nil
		}),
		filter("f", keepIDs("b", "c")),
		scorer("s", "2", byID(map[string]float64{"b": 0.3, "c": 0.6})))
	c := testCycle()
	c.Endpoints[0].Labels = map[string]string{"zone": "x"}
	c.Endpoints[1].Prediction = sdk.Prediction{Valid: true, TTFTMs: 1}
	want := testCycle()
	want.Endpoints[0].Labels = map[string]string{"zone": "x"}
	want.Endpoints[1].Prediction = sdk.Prediction{Valid: true, TTFTMs: 1}
	tr := p.Run(context.Background(), c)
	if diff := cmp.Diff(want, c, cmpopts.IgnoreUnexported(sdk.Cycle{})); diff != "" {
		t.Errorf("Run changed its input (-before +after):\n%s", diff)
	}
	if tr.Candidates[1].Prediction.TTFTMs != 1 || tr.Producer.Reason != pipeline.SkippedProducer || tr.OrderIDs()[0] != "c" { // c: 2 × 0.6 = 1.2 > b: 2 × 0.3 = 0.6
		t.Errorf("candidates %+v producer %+v order %v, want the cycle's own predictions kept and c first", tr.Candidates, tr.Producer, tr.OrderIDs())
	}
	tr = p.Run(context.Background(), testCycle()) // without predictions: the producer's
	if tr.Candidates[1].Prediction.TTFTMs != 9 || tr.Producer.Reason != "" {
		t.Errorf("candidates %+v producer %+v, want the producer's predictions", tr.Candidates, tr.Producer)
	}
}

func TestStats(t *testing.T) {
	p := build(t, "1s",
		producer("predict", func(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
			return make([]sdk.Prediction, len(c.Endpoints)), nil
		}),
		filter("f", func(context.Context, *sdk.Cycle) (sdk.FilterVerdict, error) { return sdk.FilterVerdict{}, boom }),
		scorer("good", "", byID(map[string]float64{"a": 1})),
		scorer("short", "", func(context.Context, *sdk.Cycle) ([]float64, error) { return []float64{1}, nil }),
		admitter("adm", func(context.Context, *sdk.Cycle) (sdk.AdmitVerdict, error) {
			return sdk.AdmitVerdict{Admitted: true}, nil
		}),
		picker("pick", func(_ context.Context, c *sdk.Cycle, _ []float64) ([]int, error) { return []int{0}, nil }))
	const runs = 3
	for range runs {
		p.Run(context.Background(), testCycle())
	}
	// One cycle at a time: every call travels alone, so batches = calls. Three round trips are
	// too few to adapt from: every deadline is still stageTimeout, no round trip typical yet.
	want := []pipeline.Stats{
		{Plugin: "predict", Stage: sdk.StageProducer, Calls: runs, Batches: runs},
		{Plugin: "f", Stage: sdk.StageFilter, Calls: runs, Fallbacks: runs, Batches: runs},
		{Plugin: "good", Stage: sdk.StageScorer, Calls: runs, Batches: runs},
		{Plugin: "short", Stage: sdk.StageScorer, Calls: runs, Fallbacks: runs, Batches: runs},
		{Plugin: "adm", Stage: sdk.StageAdmitter, Calls: runs, Batches: runs},
		{Plugin: "pick", Stage: sdk.StagePicker, Calls: runs, Batches: runs},
	}
	for i := range want {
		want[i].Profile, want[i].Deadline = "default", time.Second
	}
	if diff := cmp.Diff(want, p.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}

// Cycle i has endpoints i-0 … i-3; endpoint k waits (i+k) mod 4 requests. The producer predicts
// TTFT = 10 × waiting, the filter drops the endpoint waiting 0, and the scorer scores TTFT/40, so
// the order is waiting 3, 2, 1: k = (3−i) mod 4, (2−i) mod 4, (1−i) mod 4. Every third request
// (i mod 3 = 2) has priority −1 and is shed by the admitter.
func TestRunConcurrent(t *testing.T) {
	p := build(t, "5s",
		producer("predict", func(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
			out := make([]sdk.Prediction, len(c.Endpoints))
			for i, e := range c.Endpoints {
				out[i] = sdk.Prediction{Valid: true, TTFTMs: 10 * float64(e.State.Waiting)}
			}
			return out, nil
		}),
		filter("busy", func(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
			var v sdk.FilterVerdict
			for i, e := range c.Endpoints {
				if e.State.Waiting > 0 {
					v.Kept = append(v.Kept, i)
				}
			}
			return v, nil
		}),
		scorer("ttft", "", func(_ context.Context, c *sdk.Cycle) ([]float64, error) {
			out := make([]float64, len(c.Endpoints))
			for i, e := range c.Endpoints {
				out[i] = e.Prediction.TTFTMs / 40
			}
			return out, nil
		}),
		admitter("shed", func(_ context.Context, c *sdk.Cycle) (sdk.AdmitVerdict, error) {
			if len(c.Endpoints) != 4 {
				return sdk.AdmitVerdict{}, fmt.Errorf("saw %d endpoints, want all 4", len(c.Endpoints))
			}
			return sdk.AdmitVerdict{Admitted: c.Request.Priority >= 0, Reason: "sheddable"}, nil
		}))
	const n = 50
	traces := make([]*pipeline.Trace, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := &sdk.Cycle{Request: sdk.Request{ID: fmt.Sprint(i), Priority: int32(-(i % 3 / 2))}, Seed: uint64(i)}
			for k := range 4 {
				c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: fmt.Sprintf("%d-%d", i, k), State: sdk.EndpointState{Waiting: int64((i + k) % 4)}})
			}
			traces[i] = p.Run(context.Background(), c)
		})
	}
	wg.Wait()
	for i, tr := range traces {
		var want []string
		for w := 3; w >= 1; w-- {
			want = append(want, fmt.Sprintf("%d-%d", i, ((w-i)%4+4)%4))
		}
		outcome := "picked"
		if i%3 == 2 { // priority −1: shed, though an order exists
			outcome = "rejected"
		}
		if got := tr.OrderIDs(); !slices.Equal(got, want) || tr.RequestID != fmt.Sprint(i) || tr.Outcome() != outcome {
			t.Errorf("cycle %d: trace of %s, %s, order %v; want %s, order %v", i, tr.RequestID, tr.Outcome(), got, outcome, want)
		}
	}
	for _, s := range p.Stats() {
		if s.Calls != n || s.Fallbacks != 0 || s.Batches < 1 || s.Batches > n {
			t.Errorf("stats %+v, want %d calls in 1…%d batches and no fallback", s, n, n)
		}
	}
}

// The admitter runs beside the filters and must see the cycle as the producer left it, not the
// narrowed cycle a filter produced meanwhile (it used to read the variable the filter loop
// reassigns: a data race, and most runs saw only the kept endpoints). Run under -race.
func TestAdmitterSeesEveryCandidate(t *testing.T) {
	var mu sync.Mutex
	var saw [][]string
	p := build(t, "1s", filter("only-a", keepIDs("a")),
		admitter("adm", func(_ context.Context, c *sdk.Cycle) (sdk.AdmitVerdict, error) {
			mu.Lock()
			defer mu.Unlock()
			saw = append(saw, endpointIDs(c.Endpoints))
			return sdk.AdmitVerdict{Admitted: true}, nil
		}))
	for range 100 {
		p.Run(context.Background(), testCycle())
	}
	for _, ids := range saw {
		if !slices.Equal(ids, []string{"a", "b", "c"}) {
			t.Fatalf("admitter saw %v, want [a b c]", ids)
		}
	}
}

// An out-of-range index becomes a fallback whether the stage is remote (the sdk client rejects it)
// or in-process (transport.Local applies the same check), never a panic in Run.
func TestOutOfRangeIndicesFallBack(t *testing.T) {
	tests := []struct {
		name  string
		stage stageSpec
		order []string
	}{
		{"filter", filter("f", func(context.Context, *sdk.Cycle) (sdk.FilterVerdict, error) {
			return sdk.FilterVerdict{Kept: []int{0, 5}}, nil
		}), []string{"b", "c", "a"}},
		{"negative filter index", filter("f", func(context.Context, *sdk.Cycle) (sdk.FilterVerdict, error) {
			return sdk.FilterVerdict{Kept: []int{-1, 1}}, nil
		}), []string{"b", "c", "a"}},
		{"picker", picker("p", func(context.Context, *sdk.Cycle, []float64) ([]int, error) { return []int{7, 0}, nil }),
			[]string{"b", "c", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, "1s", tt.stage, scorer("s", "", byID(map[string]float64{"a": 0.1, "b": 0.9, "c": 0.5})))
			var tr *pipeline.Trace
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Run panicked: %v", r)
					}
				}()
				tr = p.Run(context.Background(), testCycle())
			}()
			if got := tr.OrderIDs(); !slices.Equal(got, tt.order) { // the stage's fallback: keep all / max-score
				t.Errorf("order %v, want %v", got, tt.order)
			}
		})
	}
}

// Over the wire a stage's error arrives as *sdk.StatusError and is traced "stage error: boom";
// transport.Local passes a plain error through, and fallbackReason calls it "invalid answer: boom".
func TestLocalStageErrorIsAStageError(t *testing.T) {
	p := build(t, "1s", scorer("s", "", func(context.Context, *sdk.Cycle) ([]float64, error) {
		return nil, fmt.Errorf("no model loaded")
	}))
	if got := p.Run(context.Background(), testCycle()).Scorers[0].Fallback; got != "stage error: no model loaded" {
		t.Errorf("fallback %q, want %q", got, "stage error: no model loaded")
	}
}

// TestFiltersSeeExcluded: the fleet's endpoints out of the rotation travel with the cycle through
// every filter, the ones after a filter that narrowed the candidates included.
func TestFiltersSeeExcluded(t *testing.T) {
	var mu sync.Mutex
	saw := map[string][]sdk.ExcludedEndpoint{}
	seen := func(name string) filterFn {
		return func(ctx context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
			mu.Lock()
			saw[name] = c.Excluded
			mu.Unlock()
			return keepIDs("a", "c")(ctx, c)
		}
	}
	p := build(t, "1s", filter("first", seen("first")), filter("second", seen("second")))
	c := testCycle()
	c.Excluded = []sdk.ExcludedEndpoint{{ID: "d", Labels: map[string]string{"zone": "z1"}, Reason: sdk.ExcludedUnhealthy}}
	if tr := p.Run(context.Background(), c); tr.Outcome() != "picked" {
		t.Fatalf("outcome %q", tr.Outcome())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"first", "second"} {
		if !cmp.Equal(saw[name], c.Excluded) {
			t.Errorf("filter %s saw excluded %+v, want %+v", name, saw[name], c.Excluded)
		}
	}
}
