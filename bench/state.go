package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/prefix"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// StateOptions configure RunState.
type StateOptions struct {
	// Replicas share the state plane; Rate is the fleet's requests/s, spread evenly over them,
	// for Duration.
	Replicas int
	Rate     float64
	Duration time.Duration
	// Endpoints is the fleet's size; PromptBlocks and AnswerBlocks the prefix blocks of each
	// request's prompt and answer (16 tokens a block: 64 is a 1,024-token prompt).
	Endpoints, PromptBlocks, AnswerBlocks int
	// FirstToken and Finish are when a request's first token comes and when it ends, after its
	// dispatch: with Rate, how many are in flight (snapshots carry them all).
	FirstToken, Finish time.Duration
	// PublishInterval and SnapshotInterval are the planes' state.publishInterval and
	// state.snapshotInterval.
	PublishInterval, SnapshotInterval time.Duration
	// URL is an external NATS server's; "" runs one embedded in this process, whose CPU then
	// counts as the replicas' (as when a router embeds it).
	URL string
	// Partition, when set, measures a NATS server stopped for this long instead
	// (RunStatePartition).
	Partition time.Duration
}

// StateResult is what RunState measured.
type StateResult struct {
	Options  StateOptions `json:"options"`
	Requests int          `json:"requests"`
	// CPUPerRequestUs is this process's CPU (user and system) per request, without a state
	// plane (each replica's ledger and index alone) and with one; StateCPUPerRequestUs their
	// difference, the plane's cost (publishing, the server when embedded, and every peer's
	// applying).
	CPUPerRequestUsAlone float64 `json:"cpu_per_request_us_alone"`
	CPUPerRequestUs      float64 `json:"cpu_per_request_us"`
	StateCPUPerRequestUs float64 `json:"state_cpu_per_request_us"`
	// PropagationMs is a message's age at each peer's arrival, from its first event (p50, p95,
	// p99), and its maximum.
	PropagationMs    stats.Percentiles3 `json:"propagation_ms"`
	PropagationMaxMs float64            `json:"propagation_max_ms"`
	// Messages and Events published, over all replicas; Applied events, over all peers.
	Messages, Events, Applied uint64
	// Lagging is the requests a replica's peers were still counting, or missing, once every
	// replica had finished its own and the planes had a snapshot interval to settle: 0 is a
	// converged view.
	Lagging int `json:"lagging"`
}

// RunState measures the state plane's cost and propagation: Replicas accounts (each a router's
// ledger and prefix index) dispatch their share of Rate requests/s for Duration, each request's
// first token FirstToken later and its end Finish later, once alone and once sharing a plane
// over NATS. Both runs issue the same requests at the same times.
func RunState(o StateOptions) (*StateResult, error) {
	if o.Replicas < 2 || o.Rate <= 0 || o.Duration <= 0 || o.Endpoints < 1 {
		return nil, fmt.Errorf("bench state: --replicas ≥ 2, --rate > 0, --duration > 0 and --endpoints ≥ 1 are needed")
	}
	res := &StateResult{Options: o}
	alone, n, err := stateRun(o, false, nil)
	if err != nil {
		return nil, err
	}
	res.Requests = n
	var prop []float64
	var mu sync.Mutex
	shared, _, err := stateRun(o, true, func(d time.Duration) {
		mu.Lock()
		prop = append(prop, float64(d)/float64(time.Millisecond))
		mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	res.CPUPerRequestUsAlone = float64(alone.cpu) / float64(time.Microsecond) / float64(n)
	res.CPUPerRequestUs = float64(shared.cpu) / float64(time.Microsecond) / float64(n)
	res.StateCPUPerRequestUs = res.CPUPerRequestUs - res.CPUPerRequestUsAlone
	slices.Sort(prop)
	if len(prop) > 0 {
		res.PropagationMs, res.PropagationMaxMs = stats.Of3(prop), prop[len(prop)-1]
	}
	res.Messages, res.Events, res.Applied, res.Lagging = shared.messages, shared.events, shared.applied, shared.lagging
	return res, nil
}

type stateRunResult struct {
	cpu                       time.Duration
	messages, events, applied uint64
	lagging                   int
}

// stateRun runs the load once; with share, over a state plane.
func stateRun(o StateOptions, share bool, propagation func(time.Duration)) (stateRunResult, int, error) {
	var r stateRunResult
	url := o.URL
	if share && url == "" {
		srv, err := stateplane.Embed(stateplane.EmbedConfig{Listen: "127.0.0.1:0"})
		if err != nil {
			return r, 0, err
		}
		defer srv.Shutdown()
		url = srv.URL()
	}
	accts, planes, err := stateAccounts(o, share, url, propagation)
	defer closePlanes(planes)
	if err != nil {
		return r, 0, err
	}
	start := cpuSelf()
	n := stateLoad(o, accts, nil)
	settle := max(o.SnapshotInterval, stateplane.DefaultSnapshotInterval) + 100*time.Millisecond
	time.Sleep(settle) // the last events and a snapshot reach every peer
	r.cpu = cpuSelf() - start
	for i, a := range accts {
		for e := range o.Endpoints { // every request ended: what a ledger still holds is a peer's, stale
			r.lagging += a.Ledger.Requests("ep-" + strconv.Itoa(e))
		}
		if share {
			st := planes[i].Stats()
			r.messages, r.events, r.applied = r.messages+st.Published, r.events+st.PublishedEvents, r.applied+st.Applied
		}
	}
	return r, n, nil
}

// stateAccounts returns o.Replicas accounts, each a router's ledger and prefix index, and with
// share their planes, started on url. The planes are returned for closePlanes even on error.
func stateAccounts(o StateOptions, share bool, url string, propagation func(time.Duration)) ([]*stateplane.Account, []*stateplane.Plane, error) {
	accts := make([]*stateplane.Account, o.Replicas)
	var planes []*stateplane.Plane
	for i := range accts {
		var p *stateplane.Plane
		if share {
			var err error
			if p, err = stateplane.New(stateplane.Config{Replica: "r" + strconv.Itoa(i), Prefix: "benchstate",
				PublishInterval: o.PublishInterval, SnapshotInterval: o.SnapshotInterval, Propagation: propagation,
				Log: zerolog.Nop()}); err != nil {
				return nil, planes, err
			}
			planes = append(planes, p)
		}
		accts[i] = stateplane.NewAccount(inflight.New(), prefix.New(config.DefaultPrefixBlocks), p)
		if share {
			if err := p.Start(url, nats.Name("foresight bench state")); err != nil {
				return nil, planes, err
			}
		}
	}
	return accts, planes, nil
}

func closePlanes(planes []*stateplane.Plane) {
	for _, p := range planes {
		p.Close()
	}
}

// stateLoad issues each replica's share of the requests, paced, and returns once every request
// has finished: how many there were. truth, when not nil, counts each endpoint's requests in
// flight as they are (by endpoint index).
func stateLoad(o StateOptions, accts []*stateplane.Account, truth []atomic.Int64) int {
	per := time.Duration(float64(time.Second) * float64(len(accts)) / o.Rate)
	total := int(o.Duration / per)
	var wg sync.WaitGroup
	for i, a := range accts {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			begin := time.Now().Add(time.Duration(i) * per / time.Duration(len(accts)))
			var inner sync.WaitGroup
			for k := range total {
				time.Sleep(time.Until(begin.Add(time.Duration(k) * per)))
				blocks := make([]uint64, o.PromptBlocks)
				for b := range blocks {
					blocks[b] = rng.Uint64()
				}
				answer := make([]uint64, o.AnswerBlocks)
				for b := range answer {
					answer[b] = rng.Uint64()
				}
				e := rng.IntN(o.Endpoints)
				ep := "ep-" + strconv.Itoa(e)
				if truth != nil {
					truth[e].Add(1)
				}
				f := a.Dispatch(ep, inflight.Request{ID: strconv.Itoa(i) + "-" + strconv.Itoa(k), PrefillTokens: int64(16 * o.PromptBlocks),
					OutputTokens: 200, TPOTSLOMs: 50, DispatchedAt: time.Now()}, blocks)
				inner.Add(1)
				time.AfterFunc(o.FirstToken, func() { f.FirstToken(time.Now()) })
				time.AfterFunc(o.Finish, func() {
					f.Answer(answer)
					f.Finish()
					if truth != nil {
						truth[e].Add(-1)
					}
					inner.Done()
				})
			}
			inner.Wait()
		})
	}
	wg.Wait()
	return total * len(accts)
}

// cpuSelf is this process's user and system CPU time so far.
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WriteText writes the result as a few lines.
func (r *StateResult) WriteText(w io.Writer) error {
	o := r.Options
	where, serverShare := "embedded NATS", " and the server"
	if o.URL != "" {
		where, serverShare = o.URL, ", not the server"
	}
	_, err := fmt.Fprintf(w, "state plane: %d replicas, %.0f requests/s for %s (%d requests), %d endpoints, %d+%d blocks a request, publish interval %s, snapshots every %s, %s\n"+
		"CPU per request: %.1f µs alone, %.1f µs sharing: the plane costs %.1f µs a request (all replicas%s)\n"+
		"propagation: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms; %d messages carrying %d events, %d applied by peers; %d requests lagging at the end\n",
		o.Replicas, o.Rate, o.Duration, r.Requests, o.Endpoints, o.PromptBlocks, o.AnswerBlocks, o.PublishInterval, o.SnapshotInterval, where,
		r.CPUPerRequestUsAlone, r.CPUPerRequestUs, r.StateCPUPerRequestUs, serverShare,
		r.PropagationMs.P50, r.PropagationMs.P95, r.PropagationMs.P99, r.PropagationMaxMs, r.Messages, r.Events, r.Applied, r.Lagging)
	return err
}
