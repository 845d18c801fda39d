package admitter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// shedAll configures queue-depth mode with a bound of 0, so that every sheddable request the
// floor does not rescue is shed, and the floor given; the floor acts from a group's first request
// unless the parameters given say otherwise.
func shedAll(t *testing.T, floor string) *Admitter {
	t.Helper()
	a := New()
	params := `{"mode": "queue-depth", "queueBounds": {"-1": 0}, "prefixGroupWindowMs": 1000, "prefixGroupMinRequests": 1` + floor + `}`
	if err := a.Configure([]byte(params)); err != nil {
		t.Fatalf("Configure(%s): %v", params, err)
	}
	return a
}

// groupCycle is a sheddable request of prefix group g (a one-block prompt of hash g) at t ms, on
// one endpoint with a queue.
func groupCycle(g uint64, tMs int) *sdk.Cycle {
	r := req(-1, 0, 0, false)
	r.PrefixBlockHashes = []uint64{g}
	return &sdk.Cycle{Request: r, Now: time.UnixMilli(int64(tMs)).UTC(), Endpoints: []sdk.Endpoint{queued("10.0.0.1", 1, 0, 1)}}
}

func TestPrefixGroupFloor(t *testing.T) {
	type step struct {
		group    uint64
		tMs      int
		admitted bool
	}
	tests := []struct {
		name  string
		floor string
		steps []step
	}{
		{
			name: "off: every request is shed",
			steps: []step{
				{1, 0, false}, {1, 10, false}, {2, 20, false},
			},
		},
		{
			name:  "floor 0.25: a group gets one request in four",
			floor: `, "prefixGroupFloor": 0.25`,
			// Admit when admitted < 0.25·(n+1) over the window's n earlier verdicts:
			// 0 < 0.25 → in; 1 < 0.5 no; 1 < 0.75 no; 1 < 1 no; 1 < 1.25 → in; 2 < 1.5 no.
			steps: []step{
				{1, 0, true}, {1, 1, false}, {1, 2, false}, {1, 3, false}, {1, 4, true}, {1, 5, false},
			},
		},
		{
			name:  "groups are counted apart: a new group's first request gets in",
			floor: `, "prefixGroupFloor": 0.25`,
			// Group 2 has an empty window at t=2: 0 < 0.25 → in, whatever group 1 had.
			steps: []step{
				{1, 0, true}, {1, 1, false}, {2, 2, true}, {1, 3, false}, {2, 4, false},
			},
		},
		{
			name:  "verdicts older than the window expire",
			floor: `, "prefixGroupFloor": 0.5`,
			// t=0 in (0 < 0.5); t=1: 1 < 1 no; t=1500: t=0 and t=1 expired (window 1000 ms), empty → in;
			// t=1600: 1 of 1, 1 < 1 no.
			steps: []step{
				{1, 0, true}, {1, 1, false}, {1, 1500, true}, {1, 1600, false},
			},
		},
		{
			name:  "floor 1 admits every request",
			floor: `, "prefixGroupFloor": 1`,
			steps: []step{
				{1, 0, true}, {1, 1, true}, {1, 2, true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := shedAll(t, tt.floor)
			for i, s := range tt.steps {
				got, err := a.Admit(context.Background(), groupCycle(s.group, s.tMs))
				if err != nil {
					t.Fatal(err)
				}
				if got.Admitted != s.admitted {
					t.Errorf("step %d (group %d at %d ms): admitted = %v, want %v (%s)", i, s.group, s.tMs, got.Admitted, s.admitted, got.Reason)
				}
			}
		})
	}
}

func TestPrefixGroupFloorReason(t *testing.T) {
	a := shedAll(t, `, "prefixGroupFloor": 0.2`)
	got, err := a.Admit(context.Background(), groupCycle(0xabc, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := "prefix group 0000000000000abc below its floor: 0 of 0 admitted in the last 1000ms < 20% " +
		"(the mode said: rejected: max waiting queue 1 on 10.0.0.1 reaches the priority -1 bound 0)"
	if !got.Admitted || got.Reason != want {
		t.Errorf("Admit = {%v, %q}, want {true, %q}", got.Admitted, got.Reason, want)
	}
}

// Two prompts that share their first block (a chat template's role marker, a system prompt's
// opening words) and differ further on are two groups, unless prefixGroupBlocks reads only the
// first block.
func TestPrefixGroupDepth(t *testing.T) {
	for _, tc := range []struct {
		depth    string
		admitted bool
	}{{"", true}, {`, "prefixGroupBlocks": 2`, true}, {`, "prefixGroupBlocks": 1`, false}} {
		a := shedAll(t, `, "prefixGroupFloor": 0.5`+tc.depth)
		first, second := groupCycle(7, 0), groupCycle(7, 1)
		first.Request.PrefixBlockHashes = []uint64{7, 100, 101}
		second.Request.PrefixBlockHashes = []uint64{7, 200, 201}
		if got, _ := a.Admit(context.Background(), first); !got.Admitted {
			t.Fatalf("%q: a group's first request was shed: %s", tc.depth, got.Reason)
		}
		// Its own group: an empty window, admitted. The first's group: 1 of 1 admitted, and
		// 1 < 0.5 × 2 is false, so the mode's rejection stands.
		if got, _ := a.Admit(context.Background(), second); got.Admitted != tc.admitted {
			t.Errorf("%q: the second prompt admitted = %v, want %v (%s)", tc.depth, got.Admitted, tc.admitted, got.Reason)
		}
	}
	a := New()
	if err := a.Configure([]byte(`{"prefixGroupBlocks": 0}`)); err == nil || !strings.Contains(err.Error(), "prefixGroupBlocks") {
		t.Errorf("prefixGroupBlocks 0: %v", err)
	}
}

// With prefixGroupMinRequests (default 10) the floor acts only once the window holds that many of
// a group's requests: one-off prompts, each its own group, are left to the mode.
func TestPrefixGroupMinRequests(t *testing.T) {
	a := shedAll(t, `, "prefixGroupFloor": 0.5, "prefixGroupMinRequests": 3`)
	// 1 and 2: fewer than 3 in the window, the mode sheds them. 3: 0 of 3 admitted < 1.5, in.
	// 4: 1 of 4 < 2, in. 5: 2 of 5 < 2.5, in.
	for i, want := range []bool{false, false, true, true, true} {
		v, err := a.Admit(context.Background(), groupCycle(5, i))
		if err != nil {
			t.Fatal(err)
		}
		if v.Admitted != want {
			t.Errorf("request %d: admitted = %v, want %v (%s)", i+1, v.Admitted, want, v.Reason)
		}
	}
	oneOffs := shedAll(t, `, "prefixGroupFloor": 0.5, "prefixGroupMinRequests": 10`)
	for i := range 50 {
		if v, _ := oneOffs.Admit(context.Background(), groupCycle(uint64(100+i), i)); v.Admitted {
			t.Fatalf("one-off prompt %d admitted by the floor: %s", i, v.Reason)
		}
	}
	if err := New().Configure([]byte(`{"prefixGroupMinRequests": 0}`)); err == nil || !strings.Contains(err.Error(), "prefixGroupMinRequests") {
		t.Errorf("prefixGroupMinRequests 0: %v", err)
	}
}

// A request without prefix blocks has no group: the floor leaves its verdict alone, and an
// admitted request (here, priority 0) counts toward its group's share.
func TestPrefixGroupFloorScope(t *testing.T) {
	a := shedAll(t, `, "prefixGroupFloor": 0.5`)
	c := groupCycle(1, 0)
	c.Request.PrefixBlockHashes = nil
	if got, _ := a.Admit(context.Background(), c); got.Admitted {
		t.Errorf("a request without prefix blocks was admitted: %s", got.Reason)
	}
	crit := groupCycle(1, 1)
	crit.Request.Priority = 0
	if got, _ := a.Admit(context.Background(), crit); !got.Admitted {
		t.Fatalf("priority 0 shed: %s", got.Reason)
	}
	// Group 1 has 1 of 1 admitted: 1 < 0.5·2 is false, so the mode's verdict stands.
	if got, _ := a.Admit(context.Background(), groupCycle(1, 2)); got.Admitted {
		t.Errorf("admitted with the group at its floor: %s", got.Reason)
	}
}

// Groups whose window is empty are forgotten once there are many, and forgetting one changes no
// verdict: an instance that saw many idle groups decides like a fresh one.
func TestPrefixGroupFloorSweep(t *testing.T) {
	a := shedAll(t, `, "prefixGroupFloor": 0.5`)
	for g := range uint64(3 * minSweep) {
		// One new group every 10 ms: about 100 have a verdict within any 1000 ms window, so a
		// sweep at minSweep groups keeps about 100 and the map never exceeds minSweep.
		if _, err := a.Admit(context.Background(), groupCycle(g+100, int(10*g))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.floor.groups); n > minSweep {
		t.Errorf("%d groups kept, want at most %d", n, minSweep)
	}
	fresh := shedAll(t, `, "prefixGroupFloor": 0.5`)
	for i := range 6 {
		got, _ := a.Admit(context.Background(), groupCycle(100, 20000+i)) // group 100 last seen at 0 ms
		want, _ := fresh.Admit(context.Background(), groupCycle(100, 20000+i))
		if got.Admitted != want.Admitted {
			t.Errorf("request %d: admitted %v after many groups, %v on a fresh instance", i, got.Admitted, want.Admitted)
		}
	}
}
