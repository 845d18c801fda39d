package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/workload"
)

// firstServer sends every request to server 0 and remembers, per request, the requests in flight
// it saw there and the sessions it routed.
type firstServer struct {
	inflight map[string]int64
	sessions map[string]bool
}

func (f *firstServer) Route(c *sdk.Cycle, _ *Fleet) (Decision, error) {
	f.inflight[c.Request.ID] = c.Endpoints[0].State.InflightRequests
	f.sessions[c.Request.SessionID] = true
	return Decision{Endpoint: 0}, nil
}

// TestReplicasDecideWithTheirOwnView: behind two replicas, each routes its share, sees in flight
// only the requests it dispatched itself, and learns only from them; session affinity keeps a
// session on one replica.
func TestReplicasDecideWithTheirOwnView(t *testing.T) {
	var reqs []workload.Request
	for i := range 40 { // arriving together, far longer than the run's spacing: all stay in flight
		reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: time.Duration(i) * time.Millisecond, InputTokens: 256,
			OutputTokens: 2000, Streaming: true, SessionID: fmt.Sprint("s", i%8)})
	}
	for _, tc := range []struct {
		name   string
		assign Assign
	}{{"random", AssignRandom(2, 7)}, {"session", AssignSession(2, 7)}} {
		t.Run(tc.name, func(t *testing.T) {
			routers := []*firstServer{{map[string]int64{}, map[string]bool{}}, {map[string]int64{}, map[string]bool{}}}
			samples := []int{0, 0}
			var replicas []Replica
			for i, r := range routers {
				replicas = append(replicas, Replica{Router: r, Observe: func(sdk.Sample, time.Time) { samples[i]++ }})
			}
			if _, err := RunReplicas(fleet(t, 2), reqs, replicas, tc.assign); err != nil {
				t.Fatal(err)
			}
			for i, r := range routers {
				if len(r.inflight) == 0 || len(r.inflight) == len(reqs) {
					t.Fatalf("replica %d routed %d of %d requests: want a share", i, len(r.inflight), len(reqs))
				}
				// Its k-th request (in arrival order) sees its own k−1 earlier ones in flight.
				k := int64(0)
				for _, q := range reqs {
					if n, ok := r.inflight[fmt.Sprint(q.ID)]; ok {
						if n != k {
							t.Fatalf("replica %d: request %d saw %d in flight, want the %d it dispatched before", i, q.ID, n, k)
						}
						k++
					}
				}
				if want := 2 * len(r.inflight); samples[i] != want { // TTFT and TPOT of each
					t.Errorf("replica %d learned from %d samples, want %d", i, samples[i], want)
				}
			}
			if tc.name == "session" {
				for s := range routers[0].sessions {
					if routers[1].sessions[s] {
						t.Errorf("session %s went to both replicas", s)
					}
				}
			}
		})
	}
}
