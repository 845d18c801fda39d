// Package cluster simulates a fleet of vLLM-like servers (sim/engine) in virtual time behind a
// router: at each arrival it builds the cycle the live router would build — engine gauges as of
// the last scrape, the router's own fresh in-flight accounting, prefix matches from the router's
// prefix index — asks a Router where to send the request, dispatches it and records what the
// request then experiences. Runs are deterministic: the same inputs give the same outcomes.
package cluster

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/kvindex"
	"github.com/foresight-router/foresight/host/prefix"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// Epoch is virtual time zero as the cycles' Now shows it.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultScrapeInterval is how often the simulated router reads the engines' metrics, so the
// gauges it sees are up to this old (the host's scrape interval, DESIGN §5).
const DefaultScrapeInterval = 50 * time.Millisecond

// Config describes the fleet.
type Config struct {
	// Engines configures each server; their count is the fleet size.
	Engines []engine.Config
	// ScrapeInterval is the router's metrics scrape period (DefaultScrapeInterval when 0).
	ScrapeInterval time.Duration
	// Seed derives each cycle's seed.
	Seed uint64
	// Progress, when set, is called after each request is routed (for a progress bar).
	Progress func()
	// FlowControl, when set, holds requests in each router while the pool is saturated (flow.go).
	FlowControl *FlowControl
	// Disaggregation, when set, makes the fleet prefill/decode disaggregated (disagg.go).
	Disaggregation *Disaggregation
	// State, when set, makes several replicas share their dispatches through a state plane
	// (state.go); without it each counts only its own.
	State *State
	// KVEvents makes the routers read the engines' KV-cache events: their prefix matches are
	// what the engines report cached (kvevents.go), instead of their own records of what they
	// sent where.
	KVEvents bool
	// Direct, when set, shares the fleet with another client: a request for which it returns
	// ok goes straight to that server at its arrival, seen by no router (kvevents.go); its
	// outcome is marked Direct.
	Direct func(r *workload.Request) (server int, ok bool)
}

// Decision is a router's answer for one request.
type Decision struct {
	// Endpoint is the index of the chosen server; Shed marks a rejected request.
	Endpoint int
	Shed     bool
	// Predicted is the prediction the router made for the chosen server, if any.
	Predicted sdk.Prediction
	// Candidates are the endpoints as the router's stages saw them, with its producer's
	// predictions; nil when it has none (flow control's detector then reads the cycle's gauges).
	Candidates []sdk.Endpoint
}

// Router chooses a server for each request. The cluster is its only caller, one request at a time.
type Router interface {
	Route(c *sdk.Cycle, fleet *Fleet) (Decision, error)
}

// Fleet is the simulated servers as a router may inspect them (the oracle simulates them forward).
type Fleet struct {
	Engines []engine.Engine
	// Arrival is the request being routed, as the engines would receive it.
	Arrival engine.Request
	// Now is the arrival time.
	Now time.Duration
}

// Observer receives the samples the host sends a producer, with the (virtual) time each was
// measured: a request's TTFT sample at its first token and its TPOT sample when it finishes (see
// sdk.Sample).
type Observer func(s sdk.Sample, at time.Time)

// Result is what a run produced.
type Result struct {
	// Outcomes holds one entry per request, in the order of the requests.
	Outcomes []stats.Outcome
	// Engines holds each server's metrics at the end of the run (prefix cache counters,
	// preemptions).
	Engines []engine.Metrics
}

// PrefixHitRate is the fleet's prefix-cache hit rate: prompt tokens served from cache over
// prompt tokens looked up (0 without lookups).
func (r *Result) PrefixHitRate() float64 {
	var q, h int64
	for _, m := range r.Engines {
		q, h = q+m.PrefixCacheQueries, h+m.PrefixCacheHits
	}
	if q == 0 {
		return 0
	}
	return float64(h) / float64(q)
}

// Run simulates reqs (in arrival order) through the fleet with router. observe, when not nil,
// gets a sample per served request.
func Run(cfg Config, reqs []workload.Request, router Router, observe Observer) (*Result, error) {
	return RunReplicas(cfg, reqs, []Replica{{Router: router, Observe: observe}}, nil)
}

// RunReplicas simulates reqs through the fleet behind several routers, as a gateway spreads
// requests over router replicas: assign gives each request's replica (nil: all to the first).
// Each replica decides with its own view — its in-flight ledger counts the requests it
// dispatched, its prefix index what they cached, and with cfg.State its peers' too, Delay after
// they happened — and its observer gets the samples of the requests it routed. The engines'
// scraped gauges are the same for all.
func RunReplicas(cfg Config, reqs []workload.Request, replicas []Replica, assign Assign) (*Result, error) {
	s, err := newSim(cfg, reqs, replicas, assign)
	if err != nil {
		return nil, err
	}
	defer s.sharing.close()
	if err := s.loop(); err != nil {
		return nil, err
	}
	res := &Result{Outcomes: s.outcomes}
	for _, e := range s.engines {
		res.Engines = append(res.Engines, e.Metrics())
	}
	return res, nil
}

// flight is a dispatched request; the engines know it by its index in reqs as their request ID.
type flight struct {
	idx     int // into reqs/outcomes
	replica *view
	tracked *stateplane.Flight // in the replica's ledger and prefix index, and shared with its peers
	held    *kvindex.Hold      // its prompt in the replica's precise index until it ends (Config.KVEvents)
	sample  sdk.Sample
	first   time.Duration
}

type sim struct {
	cfg Config
	// The router sees an engine's step only when it ends: its metrics change then (before holds
	// them as they were while a step runs), and its events reach the router then (undelivered
	// holds the last step's events until its end). The engines themselves run each step at its
	// start, when its batch is decided.
	before      []engine.Metrics
	undelivered []stepEvents
	hashes      []uint64 // applyCacheEvents' buffer
	reqs        []workload.Request
	views       []*view
	sharing     *sharing // nil without a state plane
	assign      Assign
	engines     []engine.Engine
	ids         []string
	index       map[string]int // by id: a cycle restricted by flow control holds some engines only
	scraped     []engine.Metrics
	scrapeAt    time.Duration
	flights     []*flight // by index in reqs; nil when not in flight
	hops        []*hop    // split requests' prefill hops, by index in reqs; nil when none under way
	outcomes    []stats.Outcome
}

func newSim(cfg Config, reqs []workload.Request, replicas []Replica, assign Assign) (*sim, error) {
	if len(cfg.Engines) == 0 {
		return nil, fmt.Errorf("the fleet needs at least one engine")
	}
	if len(replicas) == 0 {
		return nil, fmt.Errorf("the fleet needs at least one router")
	}
	if cfg.ScrapeInterval <= 0 {
		cfg.ScrapeInterval = DefaultScrapeInterval
	}
	if d := cfg.Disaggregation; d != nil {
		if err := d.check(len(cfg.Engines)); err != nil {
			return nil, err
		}
		if cfg.FlowControl != nil {
			return nil, fmt.Errorf("disaggregation: the simulated flow control holds whole requests only")
		}
	}
	s := &sim{cfg: cfg, reqs: reqs, assign: assign, index: map[string]int{},
		flights: make([]*flight, len(reqs)), hops: make([]*hop, len(reqs)), outcomes: make([]stats.Outcome, len(reqs))}
	blocks := 0
	for i, ec := range cfg.Engines {
		e, err := engine.New(ec)
		if err != nil {
			return nil, fmt.Errorf("engine %d: %w", i, err)
		}
		s.engines = append(s.engines, e)
		s.ids = append(s.ids, "sim-"+strconv.Itoa(i))
		s.index[s.ids[i]] = i
		blocks = max(blocks, ec.NumGPUBlocks)
	}
	s.before = make([]engine.Metrics, len(s.engines))
	s.undelivered = make([]stepEvents, len(s.engines))
	for _, r := range replicas {
		v := &view{Replica: r, inflight: inflight.New(), prefix: prefix.New(blocks)}
		v.acct = stateplane.NewAccount(v.inflight, v.prefix, nil)
		if cfg.FlowControl != nil {
			var err error
			if v.flow, err = newFlowState(cfg.FlowControl); err != nil {
				return nil, err
			}
		}
		for i, ec := range cfg.Engines {
			v.prefix.SetCapacity(s.ids[i], ec.NumGPUBlocks)
		}
		s.views = append(s.views, v)
	}
	if cfg.State != nil && len(s.views) > 1 {
		var err error
		if s.sharing, err = newSharing(*cfg.State, s.views); err != nil {
			return nil, err
		}
	}
	if cfg.KVEvents {
		s.recordCacheEvents()
	}
	s.scrape(0)
	return s, nil
}

// stepEvents are a step's events waiting for the step's end.
type stepEvents struct {
	at     time.Duration // the step's end; meaningful while events or cache is not empty
	events []engine.Event
	cache  []engine.CacheEvent // the step's cache events (Config.KVEvents)
}

func (s *sim) scrape(t time.Duration) {
	s.scraped = s.scraped[:0]
	for i, e := range s.engines {
		m := e.Metrics()
		if e.Clock() > t { // mid-step: vLLM's gauges still show the previous step's end
			m = s.before[i]
		}
		s.scraped = append(s.scraped, m)
	}
	s.scrapeAt = t
}

// loop processes, in time order, step ends (their events reach the router), engine steps,
// scrapes, flow control's expiries and arrivals until every request is done. At equal times step
// ends come first, then steps (each by server index), then the scrape, then expiries, then the
// arrival. With flow control, the routers' queues are pumped after a step end that brought a
// first token or a finished request, after each scrape and at each expiry.
func (s *sim) loop() error {
	next := 0
	nextScrape := s.cfg.ScrapeInterval
	for {
		endAt, ended := time.Duration(math.MaxInt64), -1
		stepAt, who := time.Duration(math.MaxInt64), -1
		for i, e := range s.engines {
			if u := &s.undelivered[i]; (len(u.events) > 0 || len(u.cache) > 0) && u.at < endAt {
				endAt, ended = u.at, i
			}
			if t := e.NextStep(); t >= 0 && t < stepAt {
				stepAt, who = t, i
			}
		}
		arriveAt := time.Duration(math.MaxInt64)
		if next < len(s.reqs) {
			arriveAt = s.reqs[next].Arrival
		}
		expireAt, expiring := s.nextExpiry()
		if !expiring {
			expireAt = time.Duration(math.MaxInt64)
		}
		if who < 0 && ended < 0 && next == len(s.reqs) && !expiring {
			return nil
		}
		var err error
		var at time.Duration // the router's event's time; steps are the engines' alone
		switch {
		case ended >= 0 && endAt <= stepAt && endAt <= arriveAt && endAt <= nextScrape && endAt <= expireAt:
			at = endAt
			s.sharing.deliver(at)
			var room bool
			if room, err = s.deliver(ended); room && err == nil {
				err = s.pumpAll(endAt)
			}
		case who >= 0 && stepAt <= arriveAt && stepAt <= nextScrape && stepAt <= expireAt:
			s.step(who, stepAt)
			continue
		case nextScrape <= arriveAt && nextScrape <= expireAt:
			at = nextScrape
			s.sharing.deliver(at)
			s.scrape(nextScrape)
			err = s.pumpAll(nextScrape)
			nextScrape += s.cfg.ScrapeInterval
		case expiring && expireAt <= arriveAt:
			at = expireAt
			s.sharing.deliver(at)
			err = s.pumpAll(expireAt)
		default:
			at = arriveAt
			s.sharing.deliver(at)
			err = s.arrive(next)
			next++
			if s.cfg.Progress != nil {
				s.cfg.Progress()
			}
		}
		if err == nil {
			err = s.sharing.publish(at)
		}
		if err != nil {
			return err
		}
	}
}

// step runs engine i's next step and holds its events until the step ends.
func (s *sim) step(i int, at time.Duration) {
	s.before[i] = s.engines[i].Metrics()
	res := s.engines[i].Step(at)
	u := &s.undelivered[i]
	u.at, u.events = res.End, append(u.events[:0], res.Events...)
	if s.cfg.KVEvents {
		u.cache = s.engines[i].TakeCacheEvents(u.cache[:0])
	}
}

// deliver hands engine i's last step's events to the router: first tokens, token counts and
// finished requests, and the answers of prefill hops. It reports whether a first token or a
// finish was among them: what may have made room for a queued request.
func (s *sim) deliver(i int) (room bool, err error) {
	u := &s.undelivered[i]
	events := u.events
	u.events = u.events[:0]
	s.applyCacheEvents(i, u.cache)
	u.cache = u.cache[:0]
	for _, ev := range events {
		if ev.ID >= prefillBase {
			if err := s.prefilled(ev); err != nil {
				return room, err
			}
			continue
		}
		f := s.flights[ev.ID]
		if f == nil {
			continue
		}
		switch ev.Kind {
		case engine.FirstToken:
			room = true
			f.first = ev.Time
			s.outcomes[f.idx].CachedTokens = ev.CachedTokens
			f.tracked.FirstToken(Epoch.Add(u.at))
			s.firstToken(f, Epoch.Add(ev.Time))
		case engine.Token:
			f.tracked.Tokens(int64(ev.Tokens), Epoch.Add(u.at))
		case engine.Finish:
			room = true
			s.recordAnswer(f)
			s.finish(f, ev)
			f.tracked.Finish()
			f.held.Release()
			s.flights[ev.ID] = nil
		}
	}
	return room, nil
}

// recordAnswer notes in the prefix index that the finished request's prompt and answer are now
// cached where it ran, as the live router records a response it streamed: the engine keeps
// every full block of both (a follow-up turn, whose prompt contains this answer, hits them), and
// it frees them at the end, which makes them its most recently used.
func (s *sim) recordAnswer(f *flight) {
	f.tracked.Answer(s.reqs[f.idx].OutputBlocks)
}

// firstToken sends the request's TTFT sample, as the live router does when the first token
// streams (a request that is not streamed has no TTFT to learn).
func (s *sim) firstToken(f *flight, at time.Time) {
	if f.replica.Observe == nil || !f.sample.Request.Streaming {
		return
	}
	smp := f.sample
	// From the dispatch, as sdk.Sample says: a request that waited in the router's flow-control
	// queue must not teach the producer that the endpoint was slower by that wait.
	smp.ActualTTFTMs = float64(f.first-smp.DispatchedAt.Sub(Epoch)) / float64(time.Millisecond)
	f.replica.Observe(smp, at)
}

// finish records the request's outcome and sends its TPOT sample (streamed, two tokens or more).
func (s *sim) finish(f *flight, ev engine.Event) {
	r := &s.reqs[f.idx]
	o := &s.outcomes[f.idx]
	o.TTFT = f.first - r.Arrival
	o.E2E = ev.Time - r.Arrival
	o.OutputTokens = ev.Tokens
	if ev.Tokens >= 2 {
		o.TPOTMs = float64(ev.Time-f.first) / float64(time.Millisecond) / float64(ev.Tokens-1)
	}
	// As the live router: a TPOT sample only for a streamed answer it could time token by token.
	if f.replica.Observe != nil && f.sample.Request.Streaming && o.TPOTMs > 0 {
		smp := f.sample
		smp.ActualTPOTMs = o.TPOTMs
		smp.OutputTokens = int64(ev.Tokens)
		f.replica.Observe(smp, Epoch.Add(ev.Time))
	}
}
