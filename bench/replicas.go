package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/foresight-router/foresight/sim/cluster"
)

// replicaAssign is how the routing bench spreads arrivals over o.Replicas routers (nil: one).
func replicaAssign(o RoutingOptions) (cluster.Assign, error) {
	n := max(o.Replicas, 1)
	switch o.Assign {
	case "", "random":
		if n == 1 {
			return nil, nil
		}
		return cluster.AssignRandom(n, o.Seed), nil
	case "session":
		return cluster.AssignSession(n, o.Seed), nil
	default:
		return nil, fmt.Errorf("--assign %q: accepted: random, session", o.Assign)
	}
}

// newReplicas builds one strategy per replica: each its own pipeline, plugin processes and
// producer, as each router replica runs its own. Unless o.Alone, the producers share their
// samples through a temporary directory (the producer's shareDir, one replicaID each), exchanged
// inline at every sharePeriodMs of simulated time, so runs repeat. On error, the ones built are
// closed.
func newReplicas(ctx context.Context, name string, o RoutingOptions) (_ []*strategy, err error) {
	n := max(o.Replicas, 1)
	out := make([]*strategy, 0, n)
	var dir string
	defer func() {
		if err != nil {
			for _, s := range out {
				s.close()
			}
			if dir != "" {
				_ = os.RemoveAll(dir)
			}
		}
	}()
	if n > 1 && !o.Alone {
		if dir, err = os.MkdirTemp("", "foresight-bench-share-"); err != nil {
			return nil, err
		}
	}
	for i := range n {
		var params map[string]any
		if dir != "" {
			params = map[string]any{"shareDir": dir, "replicaID": "replica-" + strconv.Itoa(i)}
		}
		st, err := newStrategy(ctx, name, o, params)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	if dir != "" {
		last := out[n-1].close
		out[n-1].close = func() { last(); _ = os.RemoveAll(dir) }
	}
	return out, nil
}

// replicasText describes the replicas for a table's heading ("" with one router).
func (r *RoutingResult) replicasText() string {
	if r.Replicas <= 1 {
		return ""
	}
	learning := "sharing samples"
	if r.Alone {
		learning = "each learning alone"
	}
	return fmt.Sprintf(", %d router replicas (%s assignment, %s)", r.Replicas, cmp.Or(r.Assign, "random"), learning)
}
