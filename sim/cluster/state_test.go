package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/sim/workload"
)

// TestReplicasSharingAStatePlane: behind two replicas sharing a state plane (a real NATS server),
// each sees in flight its own requests and those its peer dispatched at least Delay before; at
// Delay 0, every earlier request, as one router would. The runs repeat.
func TestReplicasSharingAStatePlane(t *testing.T) {
	srv, err := stateplane.Embed(stateplane.EmbedConfig{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	var reqs []workload.Request
	for i := range 40 { // 1 ms apart, far longer than the run: all stay in flight
		reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: time.Duration(i) * time.Millisecond, InputTokens: 256,
			OutputTokens: 2000, Streaming: true})
	}
	assign := AssignRandom(2, 7)
	for run, delay := range []time.Duration{0, 3 * time.Millisecond, 3 * time.Millisecond} {
		routers := []*firstServer{{map[string]int64{}, map[string]bool{}}, {map[string]int64{}, map[string]bool{}}}
		cfg := fleet(t, 2)
		cfg.State = &State{URL: srv.URL(), Prefix: fmt.Sprint("test", run), Delay: delay}
		if _, err := RunReplicas(cfg, reqs, []Replica{{Router: routers[0]}, {Router: routers[1]}}, assign); err != nil {
			t.Fatal(err)
		}
		for _, q := range reqs {
			mine := assign(&q)
			var want int64
			for _, p := range reqs[:q.ID] {
				if assign(&p) == mine || p.Arrival+delay <= q.Arrival {
					want++
				}
			}
			if got := routers[mine].inflight[fmt.Sprint(q.ID)]; got != want {
				t.Fatalf("delay %s: request %d on replica %d saw %d in flight, want %d", delay, q.ID, mine, got, want)
			}
		}
	}
}
