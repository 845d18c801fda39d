// Package loadgen replays a workload against an OpenAI-compatible API in real time and measures
// every request as a client sees it: status, time to first token, time per output token, end to
// end, whether it met its SLO. It sends what the router reads: the SLO headers, the objective,
// the session, and the request's class as its tenant (the fairness id of flow control). The demo drives the router with it; it works against any server that speaks
// /v1/completions, the emulator included.
package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/foresight-router/foresight/sim/workload"
)

// The objectives sent in x-llm-d-inference-objective: requests with priority ≥ 0 are
// interactive, the others batch. examples/pipeline.yaml maps them to priorities 1 and −1.
const (
	ObjectiveInteractive = "interactive"
	ObjectiveBatch       = "batch"
)

// Defaults of Options.
const (
	// DefaultMaxInFlight bounds the requests in flight. An arrival beyond it is skipped and
	// counted: an open-loop generator must not turn an overloaded server into unbounded
	// goroutines and sockets, and 256 is above what a demo fleet of a few servers can run at once.
	DefaultMaxInFlight = 256
	// DefaultDrain is how long requests in flight may finish after the last dispatch.
	DefaultDrain = 10 * time.Second
	// DefaultWindow is the span of Snapshot.Recent.
	DefaultWindow = 10 * time.Second
)

// Options configure a Generator.
type Options struct {
	// BaseURL is the API's base, e.g. "http://127.0.0.1:8080"; requests go to BaseURL +
	// "/v1/completions". Required unless Targets is set.
	BaseURL string
	// Targets, in place of BaseURL, are several APIs' bases the generator spreads its requests
	// over itself, as a client-side load balancer does; Chooser picks each request's target
	// (nil: NewRoundRobin) and Result.Target says which one it was.
	Targets []string
	Chooser Chooser
	// OmitObjective leaves out the x-llm-d-inference-objective header: a router whose config
	// declares no objectives serves an unknown one at the default priority, but logs its name.
	OmitObjective bool
	// ClassObjectives sends a request's class name (workload.Request.Class) as its objective,
	// for a router that declares one objective per class; requests without a class keep
	// interactive or batch.
	ClassObjectives bool
	// Model is the request's "model". Required.
	Model string
	// Duration ends dispatching: no request whose arrival is at or after Duration is sent (0:
	// the whole workload).
	Duration time.Duration
	// Drain is how long requests in flight may still run once dispatching has ended (at
	// Duration, or at the last arrival); then they are cancelled and count as Cut. Default
	// DefaultDrain.
	Drain time.Duration
	// MaxInFlight caps the requests in flight (default DefaultMaxInFlight).
	MaxInFlight int
	// Window is the span of Snapshot.Recent (default DefaultWindow).
	Window time.Duration
	// OnResult, when set, is called with every result as its request ends, from the request's
	// goroutine; it must be safe for concurrent use.
	OnResult func(Result)
}

// Generator replays workloads. Its Snapshot may be read while Run runs, from any goroutine.
type Generator struct {
	opts      Options
	endpoints []string // the completions URL of each target (one: BaseURL's)
	chooser   Chooser
	client    *http.Client
	stats     stats
	runMu     sync.Mutex
}

// New validates opts and returns a generator.
func New(opts Options) (*Generator, error) {
	bases := opts.Targets
	switch {
	case len(bases) == 0:
		bases = []string{opts.BaseURL}
	case opts.BaseURL != "":
		return nil, fmt.Errorf("base URL %q and %d targets: set one or the other", opts.BaseURL, len(opts.Targets))
	}
	endpoints := make([]string, len(bases))
	for i, base := range bases {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("base URL %q: want http(s)://host:port", base)
		}
		endpoints[i] = strings.TrimSuffix(base, "/") + "/v1/completions"
	}
	switch {
	case opts.Model == "":
		return nil, fmt.Errorf("model is required")
	case opts.Duration < 0:
		return nil, fmt.Errorf("duration must be >= 0, got %v", opts.Duration)
	case opts.Drain < 0:
		return nil, fmt.Errorf("drain must be >= 0, got %v", opts.Drain)
	case opts.MaxInFlight < 0:
		return nil, fmt.Errorf("max in flight must be >= 0, got %d", opts.MaxInFlight)
	case opts.Window < 0:
		return nil, fmt.Errorf("window must be >= 0, got %v", opts.Window)
	}
	opts.Drain = cmp.Or(opts.Drain, DefaultDrain)
	opts.MaxInFlight = cmp.Or(opts.MaxInFlight, DefaultMaxInFlight)
	opts.Window = cmp.Or(opts.Window, DefaultWindow)
	g := &Generator{
		opts:      opts,
		endpoints: endpoints,
		chooser:   cmp.Or(opts.Chooser, NewRoundRobin(len(endpoints))),
		client: &http.Client{Transport: &http.Transport{
			Proxy:               nil, // loopback and lab fleets: never through an HTTP proxy
			MaxIdleConnsPerHost: opts.MaxInFlight,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true, // SSE is read as it arrives
		}},
	}
	g.stats.window = opts.Window
	return g, nil
}

// Snapshot returns the current counts and latency figures of the run.
func (g *Generator) Snapshot() Snapshot { return g.stats.snapshot(time.Now()) }

// Run sends reqs (in arrival order, as a workload holds them) at their arrival times since the
// call, each in its own goroutine, until the workload or Duration ends; then it lets requests in
// flight run for up to Drain and cancels the rest. Cancelling ctx stops dispatching and cancels
// every request in flight at once. Run returns when no request is in flight and no goroutine of
// its own is left, with the final snapshot. A Generator runs one workload at a time and its
// figures accumulate over runs.
func (g *Generator) Run(ctx context.Context, reqs []workload.Request) Snapshot {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	g.stats.begin(start)

	var wg sync.WaitGroup
	slots := make(chan struct{}, g.opts.MaxInFlight)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	stopAt := time.Duration(0) // when dispatching ends, since start
dispatch:
	for i := range reqs {
		r := &reqs[i]
		if g.opts.Duration > 0 && r.Arrival >= g.opts.Duration {
			stopAt = g.opts.Duration
			break
		}
		stopAt = r.Arrival
		if d := time.Until(start.Add(r.Arrival)); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				break dispatch
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		default:
			g.stats.skip()
			continue
		}
		g.stats.dispatch()
		target := g.chooser.Pick()
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := g.do(ctx, start, r, target)
			g.chooser.Done(target)
			g.stats.add(&res, time.Since(start))
			<-slots
			if g.opts.OnResult != nil {
				g.opts.OnResult(res)
			}
		}()
	}

	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	timer.Reset(max(time.Until(start.Add(stopAt+g.opts.Drain)), 0))
	select {
	case <-done:
	case <-ctx.Done():
	case <-timer.C:
	}
	cancel()
	<-done
	g.client.CloseIdleConnections()
	return g.Snapshot()
}
