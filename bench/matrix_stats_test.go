package bench

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

func TestIntervalOf(t *testing.T) {
	// Mean 12; s = √((4 + 0 + 4)/2) = 2; se = 2/√3 ≈ 1.1547; t(0.975, 2) = 4.303: half ≈ 4.9687.
	iv := intervalOf([]float64{10, 12, 14})
	if iv.Mean != 12 || math.Abs(iv.Low-7.0313) > 1e-4 || math.Abs(iv.High-16.9687) > 1e-4 {
		t.Errorf("intervalOf(10, 12, 14) = %+v, want 12 in [7.0313, 16.9687]", iv)
	}
	// Two seeds: mean 5, s = √2, se = 1, t(0.975, 1) = 12.706.
	if iv := intervalOf([]float64{4, 6}); iv.Mean != 5 || math.Abs(iv.High-17.706) > 1e-9 {
		t.Errorf("intervalOf(4, 6) = %+v, want 5 in [−7.706, 17.706]", iv)
	}
	if iv := intervalOf([]float64{3}); iv.Low != 3 || iv.High != 3 {
		t.Errorf("intervalOf(3) = %+v, want a zero-width interval", iv)
	}
}

func TestAggregate(t *testing.T) {
	classes := []workload.Class{
		{Name: "crit", Weight: 1, Priority: 0, SLO: workload.SLO{TTFTMs: 100}},
		{Name: "shed", Weight: 1, Priority: -1, SLO: workload.SLO{TTFTMs: 100}},
	}
	req := func(class int, group int) workload.Request {
		c := classes[class]
		return workload.Request{Priority: c.Priority, SLO: c.SLO, Group: group, Blocks: []uint64{uint64(group), 7}}
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	served := func(arrivalMs, ttftMs, e2eMs float64, slo float64) stats.Outcome {
		return stats.Outcome{Arrival: ms(arrivalMs), TTFT: ms(ttftMs), E2E: ms(e2eMs), SLO: sdkSLO(slo)}
	}
	run := matrixRun{
		requests: []workload.Request{req(0, 1), req(1, 1), req(1, 2), req(0, 2)},
		outcomes: []stats.Outcome{
			served(0, 50, 1000, 100),
			{Arrival: ms(500), Shed: true, SLO: sdkSLO(100)},
			served(1000, 150, 1000, 100), // misses its 100 ms
			served(1000, 80, 500, 100),
		},
		bestMatch:    []float64{0, 0.5, 0, 1},
		newGroupFrom: 4,
	}
	run.outcomes[2].Predicted = sdk.Prediction{Valid: true, TTFTMs: 90}
	row := aggregate(matrixConfig{name: "x", file: "x.yaml"}, classes, []matrixRun{run})
	// The run spans 0 → 2 s (request 2 ends at 1 + 1 s). crit: both served within 100 ms: goodput
	// 2/2 = 1 req/s; TTFT p99 of {50, 80} = 50 + 0.99·30 = 79.7; hits: request 3 only. shed: one
	// admitted, late: goodput 0, completion 1/2, p99 of {150}; hit arriving: request 1 (shed).
	want := []ClassFigures{
		{Class: "crit", Arrived: 2, Admitted: 2, Completed: 2, WithinSLO: 2, CompletionShare: 1,
			GoodputRPS: Interval{1, 1, 1, []float64{1}}, TTFTP99Ms: Interval{79.7, 79.7, 79.7, []float64{79.7}},
			HitArriving: 0.5, HitAdmitted: 0.5},
		{Class: "shed", Arrived: 2, Admitted: 1, Completed: 1, WithinSLO: 0, CompletionShare: 0.5,
			GoodputRPS: Interval{0, 0, 0, []float64{0}}, TTFTP99Ms: Interval{150, 150, 150, []float64{150}},
			HitArriving: 0.5, HitAdmitted: 0},
		{Class: "all", Arrived: 4, Admitted: 3, Completed: 3, WithinSLO: 2, CompletionShare: 0.75,
			GoodputRPS: Interval{1, 1, 1, []float64{1}}, TTFTP99Ms: Interval{148.6, 148.6, 148.6, []float64{148.6}},
			HitArriving: 0.5, HitAdmitted: 1.0 / 3}, // TTFT p99 of {50, 80, 150}: rank 1.98, 80 + 0.98·70
	}
	for i := range want {
		if !closeFigures(row.Classes[i], want[i]) {
			t.Errorf("class %d:\n got %+v\nwant %+v", i, row.Classes[i], want[i])
		}
	}
	if row.PredictedShare != 1.0/3 { // of the 3 admitted, request 2 had a valid prediction
		t.Errorf("predicted share %v, want 1/3", row.PredictedShare)
	}
	wantGroups := []GroupFigures{{"g1", 2, 1, 0.5}, {"g2", 2, 2, 1}}
	if !reflect.DeepEqual(row.Groups, wantGroups) {
		t.Errorf("groups %+v, want %+v", row.Groups, wantGroups)
	}

	// A new group (3) from request 2 on: the groups are counted from there, the new one labelled
	// so; a request of no group is a one-off, listed last.
	run.requests[2].Group = 3
	run.requests[3].Group = 1
	run.newGroupFrom, run.newGroup = 2, 3
	row = aggregate(matrixConfig{name: "x", newGroup: true}, classes, []matrixRun{run})
	wantGroups = []GroupFigures{{"g1", 1, 1, 1}, {"new", 1, 1, 1}}
	if !reflect.DeepEqual(row.Groups, wantGroups) {
		t.Errorf("with a new group: groups %+v, want %+v", row.Groups, wantGroups)
	}
	run.requests[3].Group = 0
	row = aggregate(matrixConfig{name: "x", newGroup: true}, classes, []matrixRun{run})
	wantGroups = []GroupFigures{{"new", 1, 1, 1}, {"one-off", 1, 1, 1}}
	if !reflect.DeepEqual(row.Groups, wantGroups) {
		t.Errorf("with a new group: groups %+v, want %+v", row.Groups, wantGroups)
	}
}

func closeFigures(a, b ClassFigures) bool {
	near := func(x, y Interval) bool {
		return math.Abs(x.Mean-y.Mean) < 1e-9 && math.Abs(x.Low-y.Low) < 1e-9 && math.Abs(x.High-y.High) < 1e-9 && len(x.PerSeed) == len(y.PerSeed)
	}
	ok := near(a.GoodputRPS, b.GoodputRPS) && near(a.TTFTP99Ms, b.TTFTP99Ms) && math.Abs(a.HitAdmitted-b.HitAdmitted) < 1e-12
	a.GoodputRPS, b.GoodputRPS, a.TTFTP99Ms, b.TTFTP99Ms, a.HitAdmitted, b.HitAdmitted = Interval{}, Interval{}, Interval{}, Interval{}, 0, 0
	return ok && reflect.DeepEqual(a, b)
}

func sdkSLO(ttftMs float64) sdk.SLO { return sdk.SLO{TTFTMs: ttftMs} }
