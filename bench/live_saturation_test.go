package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/workload"
)

// The search multiplies by the step until a rate fails, then halves the bracket geometrically:
// from 4 with step 1.25 against a fleet that keeps up to 10 req/s, it tries 4, 5, 6.25, 7.81,
// 9.77 (all kept up), 12.2 (not), then √(9.77·12.2) = 10.9, √(9.77·10.9) = 10.3 and
// √(9.77·10.3) = 10.04 (none kept up): 10.04 / 9.77 ≤ 1.05 ends it.
func TestSearchRate(t *testing.T) {
	var tried []float64
	lo, hi, runs, err := searchRate(4, 1.25, 1.05, func(r float64) (bool, error) {
		tried = append(tried, r)
		return r <= 10, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 9 || len(tried) != 9 || lo != 4*1.25*1.25*1.25*1.25 || hi <= 10 || hi > lo*1.05 {
		t.Errorf("bracket [%v, %v] after %d runs (%v); want 9.77 kept up, ≤ 1.05 × that not, after 9", lo, hi, runs, tried)
	}
	// A fleet that keeps up at every rate gives no bracket: the search stops after its bound.
	_, _, runs, err = searchRate(1, 2, 1.05, func(float64) (bool, error) { return true, nil })
	if err == nil || runs != maxSaturationRuns || !strings.Contains(err.Error(), "no bracket") {
		t.Errorf("always kept up: %d runs, %v; want the bound's error", runs, err)
	}
}

// A probe counts the arrivals after half the span and the completions within the second half.
func TestSecondHalf(t *testing.T) {
	w := &workload.Workload{}
	for i := range 11 { // one a second, 0…10 s: 5 after 5 s
		w.Requests = append(w.Requests, workload.Request{ID: uint64(i), Arrival: time.Duration(i) * time.Second})
	}
	s := time.Second
	results := []loadgen.Result{
		{Kind: loadgen.OK, Sent: 1 * s, E2E: 3 * s},                           // done at 4 s: first half
		{Kind: loadgen.OK, Sent: 4 * s, E2E: 2 * s},                           // at 6 s: counts
		{Kind: loadgen.OK, Sent: 6 * s, E2E: 4 * s},                           // at 10 s, the span's end: counts
		{Kind: loadgen.OK, Sent: 8 * s, E2E: 3 * s},                           // at 11 s: after the span
		{Kind: loadgen.Cut, Sent: 7 * s, E2E: 0},                              // cut
		{Kind: loadgen.ServerError, Sent: 6 * s, E2E: 500 * time.Millisecond}, // failed
	}
	if arrived, done := secondHalf(w, results); arrived != 5 || done != 2 {
		t.Errorf("arrived %d, done %d; want 5 and 2", arrived, done)
	}
}

// With --saturation and a cost given (not auto), --load sets the rate without measuring
// anything: load × the saturation rate per server, which the result and its text carry.
func TestLiveLoadGivenSaturation(t *testing.T) {
	o := LiveOptions{Servers: 4, Load: 0.75, Saturation: 20}
	cost, sat, err := liveLoad(context.Background(), &o, mustEngineCPU(t, "decode=40us"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Rate != 15 || sat.Measured || sat.PerServerRPS != 20 || sat.FleetRPS != 80 || sat.SimulatedPerServerRPS != 0 ||
		cost.Decode != 40*time.Microsecond {
		t.Fatalf("rate %v, saturation %+v, cost %v; want 15 req/s from the given 20 (80 for the fleet) and the given cost", o.Rate, sat, cost)
	}
	var b strings.Builder
	res := &LiveResult{Requests: 1, Load: o.Load, Saturation: sat}
	if err := res.WriteText(&b); err != nil || !strings.Contains(b.String(), "load 0.75 × the live saturation rate 20 req/s per server (given)") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
	// Without --load nothing is set.
	o = LiveOptions{Rate: 3}
	if _, sat, err := liveLoad(context.Background(), &o, EngineCPU{}); err != nil || sat != nil || o.Rate != 3 {
		t.Errorf("without --load: %v, %v, rate %v", sat, err, o.Rate)
	}
}

func mustEngineCPU(t *testing.T, s string) EngineCPU {
	t.Helper()
	c, err := ParseEngineCPU(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
