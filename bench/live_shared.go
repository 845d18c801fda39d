package bench

import (
	"context"
	"slices"
	"strings"

	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// bench live's shared fleet (LiveOptions.Shared): another client sends a fraction of the
// workload straight to the servers, round robin, alongside the run's router or baseline, which
// never sees those requests; and the fleet's KV-cache events (LiveOptions.KVEvents), which tell
// a router what the servers hold whoever sent it.

// splitShared splits w's requests into the run's own and the other client's, the same requests
// as bench routing's --shared at the same seed (sharedFleet picks them); all are the run's
// without a fraction.
func splitShared(w *workload.Workload, fraction float64, servers int, seed uint64) (own, direct []workload.Request, err error) {
	pick, err := sharedFleet(fraction, servers, seed)
	if err != nil || pick == nil {
		return w.Requests, nil, err
	}
	for _, r := range w.Requests {
		if _, ok := pick(&r); ok {
			direct = append(direct, r)
		} else {
			own = append(own, r)
		}
	}
	return own, direct, nil
}

// otherClient is the shared fleet's other client: a generator of the direct requests, round
// robin over the servers, running beside the run's own.
type otherClient struct {
	lg   *loadgen.Generator
	reqs []workload.Request
	done chan loadgen.Snapshot
}

// startOtherClient starts sending reqs to the servers at addrs; nil without requests.
func startOtherClient(ctx context.Context, o LiveOptions, addrs []string, reqs []workload.Request) (*otherClient, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	targets := make([]string, len(addrs))
	for i, a := range addrs {
		targets[i] = "http://" + a
	}
	lg, err := loadgen.New(loadgen.Options{Model: emulator.DefaultModel, Targets: targets, Chooser: loadgen.NewRoundRobin(len(targets)),
		Drain: o.Drain, MaxInFlight: o.MaxInFlight, OmitObjective: true})
	if err != nil {
		return nil, err
	}
	c := &otherClient{lg: lg, reqs: reqs, done: make(chan loadgen.Snapshot, 1)}
	go func() { c.done <- lg.Run(ctx, reqs) }()
	return c, nil
}

// wait waits for the other client's requests and returns their figures (nil without a client).
func (c *otherClient) wait() *DirectFigures {
	if c == nil {
		return nil
	}
	s := (<-c.done).Run
	d := &DirectFigures{Sent: len(c.reqs), OK: s.Count(loadgen.OK),
		TTFTMs: stats.Percentiles3{P50: s.TTFT.P50, P95: s.TTFT.P95, P99: s.TTFT.P99}}
	if h, ok := s.PrefixHitRate(); ok {
		d.CachedShare = ptr(h)
	}
	return d
}

// DirectFigures are the shared fleet's other client's requests, in a run of bench live.
type DirectFigures struct {
	Sent        int                `json:"sent"`
	OK          int                `json:"ok"`
	TTFTMs      stats.Percentiles3 `json:"ttft_ms"`
	CachedShare *float64           `json:"cached_share"`
}

// kvEventsArgs are the serve flags that give the routers the fleet's KV-cache event publishers
// (none when the fleet publishes none).
func kvEventsArgs(f liveFleet) []string {
	pubs := f.KVEventsAddrs()
	if !slices.ContainsFunc(pubs, func(p string) bool { return p != "" }) {
		return nil
	}
	return []string{"--kv-events", strings.Join(pubs, ",")}
}
