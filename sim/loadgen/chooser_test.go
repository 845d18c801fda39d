package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/workload"
)

// step is one call on a chooser: a pick (want is the target it must return) or the end of a
// request sent to done.
type step struct {
	pick bool
	want int
	done int
}

func pick(want int) step   { return step{pick: true, want: want} }
func done(target int) step { return step{done: target} }

func TestChoosers(t *testing.T) {
	tests := []struct {
		name    string
		chooser Chooser
		steps   []step
	}{
		{"round-robin cycles, ignoring load", NewRoundRobin(3),
			[]step{pick(0), pick(1), done(1), pick(2), pick(0), pick(1)}},
		{"least-outstanding on an idle fleet is round-robin", NewLeastOutstanding(3),
			// each pick ends before the next: every target has 0 in flight, ties rotate
			[]step{pick(0), done(0), pick(1), done(1), pick(2), done(2), pick(0), done(0)}},
		{"least-outstanding fills the emptiest", NewLeastOutstanding(3),
			// in flight after the first three picks: [1 1 1]; 1 ends: [1 0 1], so 1 is the least;
			// then [1 1 1] again, the tie goes to the target after the last pick (1): 2 → [1 1 2];
			// then 0 and 1 tie at 1, the scan starts after 2, at 0 → [2 1 2]; then 1 → [2 2 2].
			[]step{pick(0), pick(1), pick(2), done(1), pick(1), pick(2), pick(0), pick(1)}},
		{"least-outstanding skips a slow target", NewLeastOutstanding(2),
			// target 0 never finishes, 1 finishes each time: [1 0] → 1 → [1 1] → 1 ends → [1 0] → 1
			[]step{pick(0), pick(1), done(1), pick(1), done(1), pick(1), done(1), done(0), pick(0)}},
		{"a stray done is ignored", NewLeastOutstanding(2),
			[]step{done(1), done(5), pick(0), pick(1), pick(0)}},
		{"one target", NewLeastOutstanding(1), []step{pick(0), pick(0), done(0), pick(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, s := range tt.steps {
				if !s.pick {
					tt.chooser.Done(s.done)
					continue
				}
				if got := tt.chooser.Pick(); got != s.want {
					t.Fatalf("step %d: picked %d, want %d", i, got, s.want)
				}
			}
		})
	}
}

// A generator with several targets sends each request where its chooser says, omits the
// objective when asked, and reports the target of each result.
func TestTargets(t *testing.T) {
	var mu sync.Mutex
	hits := make([]int, 3) // requests by server
	objectives := 0
	var servers []*httptest.Server
	for i := range hits {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits[i]++
			if r.Header.Get(headerObjective) != "" {
				objectives++
			}
			mu.Unlock()
			w.Write([]byte(`{"choices":[{"text":"a"}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`))
		}))
		defer ts.Close()
		servers = append(servers, ts)
	}
	reqs := make([]workload.Request, 7)
	for i := range reqs {
		reqs[i] = workload.Request{ID: uint64(i), Arrival: time.Duration(i) * time.Millisecond, InputTokens: 4, OutputTokens: 1}
	}
	var c collect
	g := newGenerator(t, Options{Targets: []string{servers[0].URL, servers[1].URL, servers[2].URL},
		OmitObjective: true, OnResult: c.add})
	snap := g.Run(context.Background(), reqs)
	if snap.Run.Count(OK) != 7 {
		t.Fatalf("%v by kind, want 7 ok", snap.Run.ByKind)
	}
	// Round-robin by default: 7 requests over 3 servers are 3, 2 and 2.
	if !slices.Equal(hits, []int{3, 2, 2}) {
		t.Errorf("requests by server %v, want [3 2 2]", hits)
	}
	for id, res := range c.got {
		if want := int(id % 3); res.Target != want {
			t.Errorf("request %d: target %d, want %d", id, res.Target, want)
		}
	}
	if objectives != 0 {
		t.Errorf("%d requests carried an objective, want none", objectives)
	}
}

// With ClassObjectives a request's class is its objective; every request with a class sends it
// as its tenant (GIE's fairness id), and one without a class keeps interactive or batch.
func TestClassObjectivesAndTenant(t *testing.T) {
	var mu sync.Mutex
	var got []string // "objective/fairness id" of each request
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get(headerObjective)+"/"+r.Header.Get(headerFairness))
		mu.Unlock()
		w.Write([]byte(`{"choices":[{"text":"a"}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`))
	}))
	defer ts.Close()
	reqs := []workload.Request{
		{ID: 0, InputTokens: 4, OutputTokens: 1, Class: "critical", Priority: 1},
		{ID: 1, Arrival: time.Millisecond, InputTokens: 4, OutputTokens: 1, Priority: -1},
	}
	var c collect
	g := newGenerator(t, Options{BaseURL: ts.URL, ClassObjectives: true, OnResult: c.add})
	if snap := g.Run(context.Background(), reqs); snap.Run.Count(OK) != 2 {
		t.Fatalf("%v by kind, want 2 ok", snap.Run.ByKind)
	}
	slices.Sort(got)
	if want := []string{"batch/", "critical/critical"}; !slices.Equal(got, want) {
		t.Errorf("objective/tenant of the requests %q, want %q", got, want)
	}
	if c.got[0].Objective != "critical" || c.got[1].Objective != ObjectiveBatch {
		t.Errorf("results' objectives %q and %q", c.got[0].Objective, c.got[1].Objective)
	}
}
