package flowcontrol

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
)

// policies are slo-order's, whose keys these tests order by.
var policies = []string{flowpolicy.PolicyFCFS, flowpolicy.PolicyEDF, flowpolicy.PolicySLOFeasible}

// orders holds one configured slo-order per policy (the tests do not run in parallel).
var orders = map[string]*flowpolicy.Order{}

// keyed returns it with the key slo-order gives it under policy for a TTFT objective of sloMs
// (0: none), as the router does before a push.
func keyed(t testing.TB, policy string, it Item, sloMs float64) Item {
	t.Helper()
	o := orders[policy]
	if o == nil {
		o = flowpolicy.NewOrder()
		if err := o.Configure([]byte(`{"policy": "` + policy + `"}`)); err != nil {
			t.Fatal(err)
		}
		orders[policy] = o
	}
	k, err := o.Order(context.Background(), &sdk.Cycle{Now: it.Arrival, Request: sdk.Request{SLO: sdk.SLO{TTFTMs: sloMs}}})
	if err != nil {
		t.Fatal(err)
	}
	it.Rank, it.HopelessAfter = k.Rank, k.HopelessAfter
	return it
}

// One flow, so the order is the keys' alone. Arrivals and deadlines in ms from t0:
//
//	id  arrival  deadline
//	a   0        500
//	b   10       none
//	c   20       100
//	d   30       300
//	e   40       none
//	f   50       100   (c's deadline, later arrival)
var policyItems = []struct {
	id             string
	arrival, sloMs int
}{{"a", 0, 500}, {"b", 10, 0}, {"c", 20, 80}, {"d", 30, 270}, {"e", 40, 0}, {"f", 50, 50}}

func TestPolicies(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		estimate time.Duration // slo-feasible only
		popAt    int
		want     []string
	}{
		{"fcfs: arrival order, deadlines ignored", flowpolicy.PolicyFCFS, 0, 60,
			[]string{"a", "b", "c", "d", "e", "f"}},
		{"edf: 100 (c before f by arrival), 300, 500, then no deadline by arrival", flowpolicy.PolicyEDF, 0, 60,
			[]string{"c", "f", "d", "a", "b", "e"}},
		// At 60 ms with a 30 ms estimate the first token comes at 90: every deadline can be met.
		{"slo-feasible, all feasible: same as edf", flowpolicy.PolicySLOFeasible, 30 * time.Millisecond, 60,
			[]string{"c", "f", "d", "a", "b", "e"}},
		// At 60 ms with a 50 ms estimate the first token comes at 110: c and f (100) are hopeless,
		// so d (300) and a (500) go first, then b and e (no deadline, never hopeless), then the
		// hopeless c and f by deadline: served last, not shed.
		{"slo-feasible, two hopeless", flowpolicy.PolicySLOFeasible, 50 * time.Millisecond, 60,
			[]string{"d", "a", "b", "e", "c", "f"}},
		// A first token at 60 + 450 = 510 ms meets no deadline: b and e, then the rest by deadline.
		{"slo-feasible, all hopeless: edf order after those without", flowpolicy.PolicySLOFeasible, 450 * time.Millisecond, 60,
			[]string{"b", "e", "c", "f", "d", "a"}},
		// At 60 + 240 = 300 a deadline of exactly 300 is still met (not after it).
		{"slo-feasible, deadline met exactly", flowpolicy.PolicySLOFeasible, 240 * time.Millisecond, 60,
			[]string{"d", "a", "b", "e", "c", "f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			q := newQueue(t, Config{Estimate: func(now time.Time) time.Duration {
				calls++
				if !now.Equal(at(tt.popAt)) {
					t.Errorf("estimate asked at %v, want the pop's now %v", now, at(tt.popAt))
				}
				return tt.estimate
			}})
			for _, p := range policyItems {
				mustPush(t, q, keyed(t, tt.policy, Item{ID: p.id, Arrival: at(p.arrival)}, float64(p.sloMs)))
			}
			got := drain(q, at(tt.popAt))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("pop order %v, want %v", got, tt.want)
			}
			// The estimate is asked at most once a pop, and only while a hopeless-after time is at
			// the head.
			if tt.policy != flowpolicy.PolicySLOFeasible && calls != 0 {
				t.Fatalf("policy %s asked the estimate %d times", tt.policy, calls)
			}
			if calls > len(tt.want) {
				t.Fatalf("estimate asked %d times for %d pops", calls, len(tt.want))
			}
		})
	}
}

// TestSLOFeasibleOverTime pops one item at a time as the clock moves: an item becomes hopeless
// when its deadline passes now + estimate, and stays so (demotion is one-way) even when the
// estimate falls again.
func TestSLOFeasibleOverTime(t *testing.T) {
	estimate := 20 * time.Millisecond
	q := newQueue(t, Config{Estimate: func(time.Time) time.Duration { return estimate }})
	feasible := flowpolicy.PolicySLOFeasible
	mustPush(t, q,
		keyed(t, feasible, Item{ID: "x", Arrival: at(0)}, 100),
		keyed(t, feasible, Item{ID: "y", Arrival: at(0)}, 200),
		keyed(t, feasible, Item{ID: "z", Arrival: at(0)}, 300),
	)
	steps := []struct {
		now      int
		estimate time.Duration
		want     string
	}{
		// 90 + 20 = 110 > 100: x is hopeless, y is the earliest feasible.
		{90, 20 * time.Millisecond, "y"},
		// 95 + 0 = 95 would meet x's 100 again, but x stays demoted: z (feasible) first.
		{95, 0, "z"},
		{96, 0, "x"},
	}
	for _, s := range steps {
		estimate = s.estimate
		it, ok := pop(q, at(s.now))
		if !ok || it.ID != s.want {
			t.Fatalf("at %d ms popped %q (%v), want %q", s.now, it.ID, ok, s.want)
		}
	}
}

// TestHopelessItemsStillExpireAndRemove: a demoted item lives in its flow's second heap; Remove
// and Expire find it there.
func TestHopelessItemsStillExpireAndRemove(t *testing.T) {
	q := newQueue(t, Config{
		Estimate: func(time.Time) time.Duration { return 50 * time.Millisecond },
		Default:  Limits{MaxRequests: 10, MaxBytes: 100, TTL: 200 * time.Millisecond},
	})
	feasible := flowpolicy.PolicySLOFeasible
	mustPush(t, q,
		keyed(t, feasible, Item{ID: "late1", Arrival: at(0)}, 10),
		keyed(t, feasible, Item{ID: "late2", Arrival: at(0)}, 20),
		keyed(t, feasible, Item{ID: "ok", Arrival: at(0)}, 1000),
		keyed(t, feasible, Item{ID: "ok2", Arrival: at(0)}, 2000),
	)
	// At 0 + 50: late1 and late2 are demoted, ok goes.
	if it, _ := pop(q, at(0)); it.ID != "ok" {
		t.Fatalf("popped %q, want ok", it.ID)
	}
	if _, ok := q.Remove("late2"); !ok {
		t.Fatal("a demoted item could not be removed")
	}
	shed := q.Expire(at(200), nil)
	if len(shed) != 2 || shed[0].Item.ID != "late1" || shed[1].Item.ID != "ok2" {
		t.Fatalf("expired %v, want late1 then ok2 (same expiry, push order)", shed)
	}
	if q.Total() != 0 {
		t.Fatalf("%d items left", q.Total())
	}
}
