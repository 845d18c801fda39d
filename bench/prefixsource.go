package bench

import (
	"fmt"
	"slices"

	"github.com/foresight-router/foresight/internal/splitmix"
	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// Where bench routing's routers take their prefix matches from (--prefix), and the shared fleet
// (--shared): requests another client sends straight to the servers.

// The prefix sources bench routing compares.
const (
	// PrefixRouter: each router's own record of what it sent where (host/prefix).
	PrefixRouter = "router"
	// PrefixEvents: the engines' KV-cache events (host/kvindex).
	PrefixEvents = "events"
	// PrefixBoth runs every strategy with each source; the events' runs are named NAME@events.
	PrefixBoth = "both"
)

// EventsSuffix names a strategy's run with the engines' events as its prefix source.
const EventsSuffix = "@events"

// prefixSources returns the sources o.Prefix asks for, in order.
func prefixSources(o RoutingOptions) ([]bool, error) {
	switch o.Prefix {
	case "", PrefixRouter:
		return []bool{false}, nil
	case PrefixEvents:
		return []bool{true}, nil
	case PrefixBoth:
		return []bool{false, true}, nil
	}
	return nil, fmt.Errorf("--prefix %q: the sources are router, events and both", o.Prefix)
}

// runName is the name of strategy name's run with the engines' events as prefix source or not:
// with both sources, the events' run is NAME@events.
func runName(name string, events bool, o RoutingOptions) string {
	if events && o.Prefix == PrefixBoth {
		return name + EventsSuffix
	}
	return name
}

// sharedFleet returns the Direct function of a fleet that another client shares: a fraction of
// the requests, chosen by a hash of their IDs and the seed, goes straight to a server chosen the
// same way (a client-side random balancer, as a plain load balancer in front of the servers is);
// nil for a fraction of 0.
func sharedFleet(fraction float64, servers int, seed uint64) (func(*workload.Request) (int, bool), error) {
	if fraction < 0 || fraction >= 1 {
		return nil, fmt.Errorf("--shared %v: a fraction of the requests in [0, 1)", fraction)
	}
	if fraction == 0 {
		return nil, nil
	}
	return func(r *workload.Request) (int, bool) {
		h := splitmix.Mix(seed ^ splitmix.Mix(r.ID+0x5a17ed))
		if float64(h>>11)/(1<<53) >= fraction {
			return 0, false
		}
		return int(splitmix.Mix(h) % uint64(servers)), true
	}, nil
}

// routed returns the outcomes of the requests a router decided: all of them but a shared fleet's
// direct ones.
func routed(outcomes []stats.Outcome) []stats.Outcome {
	if !slices.ContainsFunc(outcomes, func(o stats.Outcome) bool { return o.Direct }) {
		return outcomes
	}
	return slices.DeleteFunc(slices.Clone(outcomes), func(o stats.Outcome) bool { return o.Direct })
}

// directOnly returns the outcomes of a shared fleet's direct requests.
func directOnly(outcomes []stats.Outcome) []stats.Outcome {
	var out []stats.Outcome
	for _, o := range outcomes {
		if o.Direct {
			out = append(out, o)
		}
	}
	return out
}

// cachedRatio is the fraction of the routed requests' prompt tokens the servers' prefix caches
// served (requests shed or sent directly left out).
func cachedRatio(reqs []workload.Request, outcomes []stats.Outcome) float64 {
	var cached, total int
	for i := range outcomes {
		if o := &outcomes[i]; !o.Shed && !o.Direct {
			cached += o.CachedTokens
			total += reqs[i].InputTokens
		}
	}
	if total == 0 {
		return 0
	}
	return float64(cached) / float64(total)
}

// idealCachedRatio is the trace's ideal cached ratio: the fraction of the prompt tokens of
// requests a router decides (not a shared fleet's direct ones) that a single server with an
// unbounded cache would serve from it, every earlier request's prompt blocks cached (as an engine
// caches them, never the prompt's last token: a prompt whose blocks all match recomputes one
// token). No routing can do better; the servers' own caches bound what any does.
func idealCachedRatio(reqs []workload.Request, direct func(*workload.Request) (int, bool)) float64 {
	seen := map[uint64]bool{}
	var cached, total int
	for i := range reqs {
		r := &reqs[i]
		n := 0
		for n < len(r.Blocks) && seen[r.Blocks[n]] {
			n++
		}
		for _, h := range r.Blocks {
			seen[h] = true
		}
		if direct != nil {
			if _, ok := direct(r); ok {
				continue
			}
		}
		cached += min(n*workload.BlockSize, max(r.InputTokens-1, 0))
		total += r.InputTokens
	}
	if total == 0 {
		return 0
	}
	return float64(cached) / float64(total)
}

// withPrefixSource sets fleet's prefix source and shared fleet for one run.
func withPrefixSource(fleet cluster.Config, events bool, direct func(*workload.Request) (int, bool)) cluster.Config {
	fleet.KVEvents, fleet.Direct = events, direct
	return fleet
}
