package flowpolicy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// A slot engine: 32 running and a queue, scrape after scrape. The state detector learns its 32
// slots after 4 such scrapes, once 32 has been the most running for 10 s, and then gives it room
// only while the router has fewer than 32 in flight there, whatever its queue depth allows; more
// running than that unlearns them, and after 2 s without a scrape showing the queue at 32, one
// request more goes through as a probe.
func TestStateDetectorLearnsSlots(t *testing.T) {
	d := NewStateDetector()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	// roomAged asks about endpoint "e" at t0 + at, scraped age ms before, with the router's
	// inflight; room, scraped 10 ms before.
	roomAged := func(at time.Duration, age float64, waiting, running, inflight int64) int {
		t.Helper()
		s := sdk.EndpointState{Waiting: waiting, Running: running, InflightRequests: inflight, MetricsAgeMs: age}
		v, err := d.Detect(context.Background(), &sdk.Cycle{Now: t0.Add(at), Endpoints: []sdk.Endpoint{{ID: "e", State: s}}})
		if err != nil {
			t.Fatal(err)
		}
		return v.Room[0]
	}
	room := func(at time.Duration, waiting, running, inflight int64) int {
		t.Helper()
		return roomAged(at, 10, waiting, running, inflight)
	}
	ms := time.Millisecond
	// The default depth rule alone: queue 0 has depth 2 + 1 places.
	if got := room(0, 0, 20, 20); got != 3 {
		t.Fatalf("nothing learned, empty queue: room %d, want the depth rule's 3", got)
	}
	for k := range 4 {
		room(time.Duration(k+1)*50*ms, 1, 32, 33)
	}
	if got := room(9*time.Second, 0, 31, 31); got != 3 {
		t.Errorf("4 scrapes with a queue at 32, first seen 9 s ago: room %d, want still the depth rule's 3", got)
	}
	// 10 s on: 3 scrapes with a queue at 32 are not enough.
	d = NewStateDetector()
	for k := range 3 {
		room(time.Duration(k+1)*50*ms, 1, 32, 33)
	}
	if got := room(10200*ms, 0, 31, 31); got != 3 {
		t.Errorf("3 scrapes with a queue at 32: room %d, want still the depth rule's 3", got)
	}
	// The same scrape seen again (the same now − age) is one observation, not a fourth.
	room(10200*ms, 1, 32, 33)
	room(10200*ms, 1, 32, 33)
	if got := room(10201*ms, 0, 31, 31); got != 3 {
		t.Errorf("a scrape seen twice counted twice: room %d, want 3", got)
	}
	slots := func(at time.Duration) []int {
		s := sdk.EndpointState{Running: 31, InflightRequests: 31, MetricsAgeMs: 10}
		v, _ := d.Detect(context.Background(), &sdk.Cycle{Now: t0.Add(at), Endpoints: []sdk.Endpoint{{ID: "e", State: s}}})
		return v.Slots
	}
	if got := slots(10201 * ms); got != nil {
		t.Errorf("before the slots are learned the verdict reports %v, want none", got)
	}
	room(10250*ms, 1, 32, 33) // the fourth scrape with a queue at 32: learned
	if got := slots(10251 * ms); !slices.Equal(got, []int{32}) {
		t.Errorf("learned: the verdict reports slots %v, want [32]", got)
	}
	cases := []struct {
		name                       string
		at                         time.Duration
		age                        float64
		waiting, running, inflight int64
		want                       int
	}{
		{"learned, 31 in flight: one slot", 10260 * ms, 10, 0, 31, 31, 1},
		{"learned, 32 in flight: full though the queue is empty", 10270 * ms, 10, 0, 31, 32, 0},
		{"learned, 29 in flight: 3 slots, as many as the depth rule", 10280 * ms, 10, 0, 29, 29, 3},
		{"stale gauges are no evidence, and the slots still bind", 10290 * ms, 500, 0, 40, 32, 0},
		{"stale gauges: the slots judge alone, as maxInflight does", 10295 * ms, 500, 0, 40, 29, 3},
		{"2 s after the last queue at 32: the probe lets one more through", 12300 * ms, 10, 0, 31, 32, 1},
		{"a queue at 32 again: the slots bind again", 12350 * ms, 10, 1, 32, 32, 0},
		{"33 running: not its slots, the depth rule again", 12400 * ms, 10, 0, 33, 33, 3},
	}
	for _, tc := range cases {
		if got := roomAged(tc.at, tc.age, tc.waiting, tc.running, tc.inflight); got != tc.want {
			t.Errorf("%s: room %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A batch engine queues beside a running count that moves: no slots are learned.
func TestStateDetectorLearnsNoSlotsFromAMovingCount(t *testing.T) {
	d := NewStateDetector()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for k, running := range []int64{50, 48, 52, 51, 49, 50, 47, 51} {
		s := sdk.EndpointState{Waiting: 2, Running: running, InflightRequests: running + 2, MetricsAgeMs: 5}
		d.Detect(context.Background(), &sdk.Cycle{Now: t0.Add(time.Duration(k) * 50 * time.Millisecond), Endpoints: []sdk.Endpoint{{ID: "e", State: s}}})
	}
	s := sdk.EndpointState{Running: 30, InflightRequests: 60, MetricsAgeMs: 5}
	v, _ := d.Detect(context.Background(), &sdk.Cycle{Now: t0.Add(time.Second), Endpoints: []sdk.Endpoint{{ID: "e", State: s}}})
	if v.Room[0] != 3 {
		t.Errorf("room %d with 60 in flight, want the depth rule's 3 (no slots learned)", v.Room[0])
	}
}

// slotScrapes 0 learns nothing; the predicted detector learns as the state detector does, for
// the endpoints it judges by their state.
func TestSlotLearningParams(t *testing.T) {
	off := NewStateDetector()
	if err := off.Configure([]byte(`{"slotScrapes": 0}`)); err != nil {
		t.Fatal(err)
	}
	pd := NewPredictedDetector()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(d sdk.Detector, k int, waiting, running, inflight int64) int {
		s := sdk.EndpointState{Waiting: waiting, Running: running, InflightRequests: inflight, MetricsAgeMs: 5}
		v, _ := d.Detect(context.Background(), &sdk.Cycle{Now: t0.Add(time.Duration(k) * 50 * time.Millisecond), Endpoints: []sdk.Endpoint{{ID: "e", State: s}}})
		return v.Room[0]
	}
	for _, d := range []sdk.Detector{off, pd} {
		for _, k := range []int{0, 1, 2, 299} { // the last 15 s on
			at(d, k, 1, 8, 9)
		}
	}
	if got := at(off, 300, 0, 7, 8); got != 3 {
		t.Errorf("slotScrapes 0: room %d, want the depth rule's 3", got)
	}
	if got := at(pd, 300, 0, 7, 8); got != 0 {
		t.Errorf("predicted detector, 8 slots learned, 8 in flight: room %d, want 0", got)
	}
	if err := off.Configure([]byte(`{"slotScrapes": -1}`)); err == nil {
		t.Error("slotScrapes -1 accepted")
	}
}

// Endpoints not seen for 10 minutes are forgotten at the next sweep.
func TestSlotLearnerForgets(t *testing.T) {
	var l slotLearner
	p := StateDefaults()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := sdk.EndpointState{Waiting: 1, Running: 4, MetricsAgeMs: 1}
	l.observe("gone", t0, &s, &p)
	later := t0.Add(11 * time.Minute)
	for k := range slotSweep {
		l.observe(fmt.Sprint("e", k%4), later.Add(time.Duration(k)*10*time.Millisecond), &s, &p)
	}
	if _, ok := l.byID["gone"]; ok || len(l.byID) != 4 {
		t.Errorf("after a sweep: %d endpoints kept, gone kept: %t; want 4, false", len(l.byID), ok)
	}
}
