package flowpolicy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

func TestOrderKeys(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	key := func(policy string, arrivalMs int, sloMs float64) sdk.OrderKey {
		o := NewOrder()
		if err := o.Configure([]byte(`{"policy": "` + policy + `"}`)); err != nil {
			t.Fatal(err)
		}
		k, err := o.Order(context.Background(), &sdk.Cycle{Now: at(arrivalMs), Request: slo(sloMs)})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	// fcfs: the arrival, objectives ignored.
	if k := key(PolicyFCFS, 10, 500); k.Rank != at(10).UnixNano() || !k.HopelessAfter.IsZero() {
		t.Errorf("fcfs: %+v", k)
	}
	// edf: arrival 0 with 1 s leaves after arrival 100 with 500 ms (deadlines 1,000 and 600).
	if a, b := key(PolicyEDF, 0, 1000), key(PolicyEDF, 100, 500); !(b.Rank < a.Rank) || a.Rank != at(1000).UnixNano() || !a.HopelessAfter.IsZero() {
		t.Errorf("edf: %+v then %+v", a, b)
	}
	// slo-feasible: the EDF rank, hopeless after the deadline.
	if k := key(PolicySLOFeasible, 100, 500); k.Rank != at(600).UnixNano() || !k.HopelessAfter.Equal(at(600)) {
		t.Errorf("slo-feasible: %+v", k)
	}
	// Without an objective: after every deadline, in arrival order, never hopeless.
	for _, p := range []string{PolicyEDF, PolicySLOFeasible} {
		none1, none2, late := key(p, 0, 0), key(p, 50, 0), key(p, 100, maxObjectiveMs)
		if !(late.Rank < none1.Rank && none1.Rank < none2.Rank) || !none1.HopelessAfter.IsZero() {
			t.Errorf("%s: a day's objective %d, none at 0 %d, none at 50 ms %d", p, late.Rank, none1.Rank, none2.Rank)
		}
	}
	// An absurd objective is capped, not overflowed.
	if k := key(PolicyEDF, 0, 1e300); k.Rank != at(maxObjectiveMs).UnixNano() {
		t.Errorf("objective 1e300 ms: rank %d", k.Rank)
	}
}

func TestOrderParams(t *testing.T) {
	if err := NewOrder().Configure([]byte(`{"policy": "lifo"}`)); err == nil || !strings.Contains(err.Error(), `"policy"`) {
		t.Errorf("unknown policy: %v", err)
	}
	if p := NewOrder().Get().Policy; p != PolicySLOFeasible {
		t.Errorf("default policy %q", p)
	}
}

func TestOrderReads(t *testing.T) {
	o := NewOrder()
	sdktest.CheckReads(t, o.Reads(), 200, func(c *sdk.Cycle) (sdk.OrderKey, error) { return o.Order(context.Background(), c) })
}
