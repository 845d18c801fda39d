package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/sim/cluster"
)

// The state modes of several replicas (RoutingOptions.State).
const (
	// StateNATS: the replicas share their requests in flight and prefix records through a state
	// plane on a real NATS server embedded in the bench, and their producers share samples and
	// models through its JetStream (unless Alone), as `serve` replicas with a state section do.
	StateNATS = "nats"
	// StateNone: each replica counts only its own requests; the producers share samples through a
	// temporary directory (unless Alone), as replicas on a shared volume do.
	StateNone = "none"
)

// DefaultPublishDelay is the simulated state plane's delay from a replica's event to its peers'
// view of it: the live plane's batching (state.publishInterval, 1 ms) plus its propagation on a
// loopback or a LAN (measured: docs/kubernetes.md "Replicas").
const DefaultPublishDelay = 2 * time.Millisecond

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

// stateMode is o's state mode with its default; an error names a mode that is not one.
func stateMode(o RoutingOptions) (string, error) {
	switch o.State {
	case "", StateNATS:
		return StateNATS, nil
	case StateNone:
		return StateNone, nil
	default:
		return "", fmt.Errorf("--state %q: accepted: nats, none", o.State)
	}
}

// replicaPlane is a routing run's NATS server when its replicas share a state plane; each
// strategy's replicas take subjects of their own (prefix).
type replicaPlane struct {
	srv   *stateplane.Embedded
	delay time.Duration
	runs  int
}

// newReplicaPlane starts the embedded server when o runs several replicas with StateNATS; nil
// otherwise.
func newReplicaPlane(o RoutingOptions) (*replicaPlane, error) {
	mode, err := stateMode(o)
	if err != nil || o.Replicas <= 1 || mode != StateNATS {
		return nil, err
	}
	srv, err := stateplane.Embed(stateplane.EmbedConfig{Listen: "127.0.0.1:0"})
	if err != nil {
		return nil, err
	}
	delay := o.PublishDelay
	if delay < 0 {
		delay = DefaultPublishDelay
	}
	return &replicaPlane{srv: srv, delay: delay}, nil
}

// next returns the state plane of a strategy's run, with the subject prefix it takes.
func (p *replicaPlane) next() *cluster.State {
	if p == nil {
		return nil
	}
	p.runs++
	return &cluster.State{URL: p.srv.URL(), Prefix: "bench" + strconv.Itoa(p.runs), Delay: p.delay}
}

func (p *replicaPlane) close() {
	if p != nil {
		p.srv.Shutdown()
	}
}

// newReplicas builds one strategy per replica: each its own pipeline, plugin processes and
// producer, as each router replica runs its own. Unless o.Alone, the producers share their
// samples: through state's NATS (its JetStream) when there is one, else through a temporary
// directory (the producer's shareDir); either way exchanged inline at every sharePeriodMs of
// simulated time, so runs repeat. On error, the ones built are closed.
func newReplicas(ctx context.Context, name string, o RoutingOptions, state *cluster.State) (_ []*strategy, err error) {
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
	if n > 1 && !o.Alone && state == nil {
		if dir, err = os.MkdirTemp("", "foresight-bench-share-"); err != nil {
			return nil, err
		}
	}
	for i := range n {
		// shareNATS "" keeps a producer from the state plane of a router it may run under.
		params := map[string]any{"shareNATS": ""}
		switch id := "replica-" + strconv.Itoa(i); {
		case n > 1 && !o.Alone && state != nil:
			params = map[string]any{"shareNATS": state.URL, "shareNATSPrefix": state.Prefix, "replicaID": id}
		case dir != "":
			params = map[string]any{"shareDir": dir, "replicaID": id}
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
	state := "each counting its own requests"
	if r.State == StateNATS {
		state = fmt.Sprintf("sharing requests in flight through NATS, %s delay", time.Duration(r.PublishDelayMs*float64(time.Millisecond)))
	}
	return fmt.Sprintf(", %d router replicas (%s assignment, %s, %s)", r.Replicas, cmp.Or(r.Assign, "random"), state, learning)
}
