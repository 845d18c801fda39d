package workload

import (
	"math"
	"strings"
	"testing"
)

// A new group arrives from ⌈From·n⌉ on with its Share of the requests and a system prompt no other
// group has; the requests before it are the scenario's own, and those of the old groups keep their
// lengths.
func TestNewGroup(t *testing.T) {
	const n = 4000
	base := Params{Servers: 2, Requests: n, Seed: 3}
	plain, err := Scenario("A", base)
	if err != nil {
		t.Fatal(err)
	}
	withNew := base
	withNew.NewGroup = &NewGroup{From: 0.5, Share: 0.25}
	w, err := Scenario("A", withNew)
	if err != nil {
		t.Fatal(err)
	}
	checkBlockCounts(t, w.Requests)
	old := map[uint64]bool{} // the first block of every group of the plain workload
	for _, r := range plain.Requests {
		old[r.Blocks[0]] = true
	}
	if len(old) != SharedPrefixPresets["A"].NumGroups {
		t.Fatalf("%d groups in scenario A, want %d", len(old), SharedPrefixPresets["A"].NumGroups)
	}
	fresh := 0
	var newKey uint64
	for i, r := range w.Requests {
		p := plain.Requests[i]
		if r.Arrival != p.Arrival || r.Priority != p.Priority {
			t.Fatalf("request %d: arrival or class changed with the new group", i)
		}
		if old[r.Blocks[0]] {
			continue
		}
		if i < n/2 {
			t.Fatalf("request %d of a new group before request %d", i, n/2)
		}
		if fresh > 0 && r.Blocks[0] != newKey {
			t.Fatalf("request %d: a second new group", i)
		}
		newKey = r.Blocks[0]
		fresh++
	}
	// Share 0.25 of the 2000 requests from the middle on: 500, binomial sd √(2000·0.25·0.75) ≈ 19.4.
	if math.Abs(float64(fresh)-500) > 4*19.4 {
		t.Errorf("%d requests of the new group, want 500 ± 78", fresh)
	}
	// Before the new group arrives the two workloads are the same request for request.
	if digest(&Workload{Requests: w.Requests[:n/2]}) != digest(&Workload{Requests: plain.Requests[:n/2]}) {
		t.Error("the requests before the new group differ from the scenario's")
	}
}

func TestNewGroupErrors(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		group    NewGroup
		wantErr  string
	}{
		{"from 1", "A", NewGroup{From: 1, Share: 0.1}, "new group: from must be in [0, 1)"},
		{"share 0", "C", NewGroup{From: 0.5, Share: 0}, "new group: share must be in (0, 1]"},
		{"not shared-prefix", "sharegpt", NewGroup{From: 0.5, Share: 0.1}, "a new prefix group needs a shared-prefix scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Scenario(tt.scenario, Params{Requests: 10, NewGroup: &tt.group})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
