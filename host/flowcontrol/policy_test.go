package flowcontrol

import (
	"slices"
	"testing"
	"time"
)

// One flow, so the order is the policy's alone. Arrivals and deadlines in ms from t0:
//
//	id  arrival  deadline
//	a   0        500
//	b   10       none
//	c   20       100
//	d   30       300
//	e   40       none
//	f   50       100   (c's deadline, later arrival)
var policyItems = []Item{
	{ID: "a", Arrival: at(0), Deadline: at(500)},
	{ID: "b", Arrival: at(10)},
	{ID: "c", Arrival: at(20), Deadline: at(100)},
	{ID: "d", Arrival: at(30), Deadline: at(300)},
	{ID: "e", Arrival: at(40)},
	{ID: "f", Arrival: at(50), Deadline: at(100)},
}

func TestPolicies(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		estimate time.Duration // slo-feasible only
		popAt    int
		want     []string
	}{
		{"fcfs: arrival order, deadlines ignored", PolicyFCFS, 0, 60,
			[]string{"a", "b", "c", "d", "e", "f"}},
		{"edf: 100 (c before f by arrival), 300, 500, then no deadline by arrival", PolicyEDF, 0, 60,
			[]string{"c", "f", "d", "a", "b", "e"}},
		// At 60 ms with a 30 ms estimate the first token comes at 90: every deadline can be met.
		{"slo-feasible, all feasible: same as edf", PolicySLOFeasible, 30 * time.Millisecond, 60,
			[]string{"c", "f", "d", "a", "b", "e"}},
		// At 60 ms with a 50 ms estimate the first token comes at 110: c and f (100) are hopeless,
		// so d (300) and a (500) go first, then c and f by deadline, then b and e.
		{"slo-feasible, two hopeless", PolicySLOFeasible, 50 * time.Millisecond, 60,
			[]string{"d", "a", "c", "f", "b", "e"}},
		// A first token at 60 + 450 = 510 ms meets no deadline: hopeless by deadline, then b and e.
		{"slo-feasible, all hopeless: edf order", PolicySLOFeasible, 450 * time.Millisecond, 60,
			[]string{"c", "f", "d", "a", "b", "e"}},
		// At 60 + 240 = 300 a deadline of exactly 300 is still met (not after it).
		{"slo-feasible, deadline met exactly", PolicySLOFeasible, 240 * time.Millisecond, 60,
			[]string{"d", "a", "c", "f", "b", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			q := newQueue(t, Config{Policy: tt.policy, Estimate: func(now time.Time) time.Duration {
				calls++
				if !now.Equal(at(tt.popAt)) {
					t.Errorf("estimate asked at %v, want the pop's now %v", now, at(tt.popAt))
				}
				return tt.estimate
			}})
			mustPush(t, q, policyItems...)
			got := drain(q, at(tt.popAt))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("pop order %v, want %v", got, tt.want)
			}
			// The estimate is asked at most once a pop, and only while a deadline is at the head.
			if tt.policy != PolicySLOFeasible && calls != 0 {
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
	q := newQueue(t, Config{Policy: PolicySLOFeasible, Estimate: func(time.Time) time.Duration { return estimate }})
	mustPush(t, q,
		Item{ID: "x", Arrival: at(0), Deadline: at(100)},
		Item{ID: "y", Arrival: at(0), Deadline: at(200)},
		Item{ID: "z", Arrival: at(0), Deadline: at(300)},
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
		Policy:   PolicySLOFeasible,
		Estimate: func(time.Time) time.Duration { return 50 * time.Millisecond },
		Default:  Limits{MaxRequests: 10, MaxBytes: 100, TTL: 200 * time.Millisecond},
	})
	mustPush(t, q,
		Item{ID: "late1", Arrival: at(0), Deadline: at(10)},
		Item{ID: "late2", Arrival: at(0), Deadline: at(20)},
		Item{ID: "ok", Arrival: at(0), Deadline: at(1000)},
		Item{ID: "ok2", Arrival: at(0), Deadline: at(2000)},
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
