package cluster

import (
	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/kvindex"
	"github.com/foresight-router/foresight/host/prefix"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/internal/splitmix"
	"github.com/foresight-router/foresight/sim/workload"
)

// Replica is one router of several behind a gateway: what decides its share of the requests,
// and what learns from them.
type Replica struct {
	Router  Router
	Observe Observer // nil: nothing learns
}

// Assign gives a request's replica, an index into RunReplicas' replicas.
type Assign func(r *workload.Request) int

// view is a replica as the simulation runs it: its own in-flight ledger and prefix index.
type view struct {
	Replica
	inflight *inflight.Ledger
	prefix   *prefix.Index
	kv       *kvindex.Index      // the engines' KV-cache events (Config.KVEvents); nil without them
	acct     *stateplane.Account // records in inflight and prefix, and shares through plane
	plane    *stateplane.Plane   // nil without a state plane
	flow     *flowState          // nil without flow control
}

// AssignRandom spreads requests over n replicas independently of each other, as a gateway's
// round-robin or random load balancing does: by a hash of the request's ID and seed, so runs
// repeat.
func AssignRandom(n int, seed uint64) Assign {
	return func(r *workload.Request) int { return int(splitmix.Mix(seed^splitmix.Mix(r.ID+1)) % uint64(n)) }
}

// AssignSession keeps every request of a session on one of n replicas, as a gateway's session
// affinity (a consistent hash of the session header) does; a request without a session goes by
// its ID, as AssignRandom.
func AssignSession(n int, seed uint64) Assign {
	random := AssignRandom(n, seed)
	return func(r *workload.Request) int {
		if r.SessionID == "" {
			return random(r)
		}
		h := seed
		for i := 0; i < len(r.SessionID); i++ {
			h = splitmix.Mix(h ^ uint64(r.SessionID[i]))
		}
		return int(h % uint64(n))
	}
}
