// Package inflight keeps the router's own, always fresh account of what it has in flight on each
// endpoint: requests dispatched and not finished, how many of them were dispatched since the
// endpoint's gauges were last scraped, uncached prompt tokens not yet past their first token,
// output tokens still to generate, and the tightest TPOT objective among them. The live router and
// the simulator both fill a cycle's router-side state from it; engine gauges come from scraping
// instead and are as old as the last scrape.
package inflight

import (
	"math"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Request is what the ledger needs to know about a dispatched request.
type Request struct {
	ID string
	// PrefillTokens are the prompt tokens the endpoint must compute (not expected to be cached).
	PrefillTokens int64
	// OutputTokens is the expected number of output tokens (max_tokens, or an estimate).
	OutputTokens int64
	// TPOTSLOMs is the request's TPOT objective; 0 when it has none (it then masks nobody's).
	TPOTSLOMs float64
	// DispatchedAt is when the router sent it, on the clock of the endpoints' scrape times: Fill
	// counts it in DispatchedSinceScrape while it is not before the endpoint's last scrape.
	DispatchedAt time.Time
}

// Flight is one dispatched request, as its dispatcher reports its progress. Its methods are safe
// for concurrent use and do nothing on a nil Flight or after Finish.
type Flight struct {
	t         *Ledger
	ep        *endpoint
	req       Request
	generated int64
	// firstAt and lastAt are when its first and its latest output tokens came, once decoding.
	firstAt, lastAt time.Time
	decoding        bool // past its first token
	done            bool
}

type endpoint struct {
	flights    map[string]*Flight
	prefill    int64     // sum of PrefillTokens of flights not yet decoding
	decode     int64     // sum of remaining output tokens of decoding flights
	lastOutput time.Time // when a flight there last produced output
	// The times of the last startsKept first tokens there, a ring: starts[next] is the oldest
	// once it is full (seen ≥ startsKept).
	starts [startsKept]time.Time
	next   int
	seen   int
}

// startsKept is how many first tokens the start rate is measured over: at a slot engine's few
// starts a second, the last few seconds; enough that one slow or quick start moves it by 1/15.
const startsKept = 16

// Ledger is safe for concurrent use.
type Ledger struct {
	mu  sync.Mutex
	eps map[string]*endpoint
}

// New returns an empty ledger.
func New() *Ledger { return &Ledger{eps: map[string]*endpoint{}} }

// Dispatch records that r was sent to endpoint and returns its flight. A second Dispatch of the
// same id to the same endpoint, while the first is in flight, is ignored and returns nil.
func (t *Ledger) Dispatch(name string, r Request) *Flight {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.eps[name]
	if e == nil {
		e = &endpoint{flights: map[string]*Flight{}}
		t.eps[name] = e
	}
	if _, dup := e.flights[r.ID]; dup {
		return nil
	}
	f := &Flight{t: t, ep: e, req: r}
	e.flights[r.ID] = f
	e.prefill += r.PrefillTokens
	return f
}

// FirstToken records that the request produced its first token at at: its prompt is done.
func (f *Flight) FirstToken(at time.Time) {
	if f == nil {
		return
	}
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if f.done || f.decoding {
		return
	}
	f.output(at)
	f.firstAt = at
	e := f.ep
	e.starts[e.next] = at
	e.next = (e.next + 1) % startsKept
	e.seen++
	f.decoding, f.generated = true, 1
	f.ep.prefill -= f.req.PrefillTokens
	f.ep.decode += f.remaining()
}

// Prefill sets the prompt tokens the endpoint computes for the request, while it has not reached
// its first token: a decode hop that turned out to be served whole computes its prompt after all.
func (f *Flight) Prefill(tokens int64) {
	if f == nil {
		return
	}
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if f.done || f.decoding {
		return
	}
	f.ep.prefill += tokens - f.req.PrefillTokens
	f.req.PrefillTokens = tokens
}

// Tokens records that the request had generated n output tokens at at (a count not above the
// last one is ignored).
func (f *Flight) Tokens(n int64, at time.Time) {
	if f == nil {
		return
	}
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if f.done || !f.decoding || n <= f.generated {
		return
	}
	f.output(at)
	f.ep.decode -= f.remaining()
	f.generated = n
	f.ep.decode += f.remaining()
}

// Finish forgets the request (completed, failed or cancelled).
func (f *Flight) Finish() {
	if f == nil {
		return
	}
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if f.done {
		return
	}
	f.done = true
	if f.decoding {
		f.ep.decode -= f.remaining()
	} else {
		f.ep.prefill -= f.req.PrefillTokens
	}
	delete(f.ep.flights, f.req.ID)
}

// Progress returns what the flight's endpoint computes of its prompt, whether it is past its first
// token, and the output tokens counted so far (the state plane's snapshot of it); zeros on a nil
// or finished flight.
func (f *Flight) Progress() (prefill int64, decoding bool, generated int64) {
	if f == nil {
		return 0, false, 0
	}
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if f.done {
		return 0, false, 0
	}
	return f.req.PrefillTokens, f.decoding, f.generated
}

func (f *Flight) remaining() int64 { return max(f.req.OutputTokens-f.generated, 0) }

// output notes that the flight, and so its endpoint, produced output at at; the caller holds the
// lock.
func (f *Flight) output(at time.Time) {
	f.lastAt = at
	if at.After(f.ep.lastOutput) {
		f.ep.lastOutput = at
	}
}

// Fill sets the router-side fields of s for endpoint as of now, given the time of the endpoint's
// last successful scrape (zero before one): InflightRequests, DispatchedSinceScrape (the requests
// in flight whose DispatchedAt is not before scrapedAt; every one before a first scrape),
// PrefillTokensInFlight, DecodeTokensInFlight, MinRunningTPOTSLOMs (0 when no request there has a
// TPOT objective), LastOutputAgeMs (−1 with nothing in flight or no output seen yet),
// FirstTokenRate (0 until startsKept first tokens were seen there) and RunningTPOTMs (0 until a
// request in flight there has two tokens).
func (t *Ledger) Fill(endpoint string, now, scrapedAt time.Time, s *sdk.EndpointState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.eps[endpoint]
	s.LastOutputAgeMs = -1
	if e == nil {
		s.InflightRequests, s.DispatchedSinceScrape, s.PrefillTokensInFlight, s.DecodeTokensInFlight, s.MinRunningTPOTSLOMs = 0, 0, 0, 0, 0
		s.FirstTokenRate, s.RunningTPOTMs = 0, 0
		return
	}
	s.FirstTokenRate = e.startRate()
	if len(e.flights) > 0 && !e.lastOutput.IsZero() {
		s.LastOutputAgeMs = max(float64(now.Sub(e.lastOutput))/float64(time.Millisecond), 0)
	}
	slo := math.Inf(1)
	var unscraped int64
	var tpot float64 // the sum of the decoding flights' TPOT so far, over streams of them
	var streams int
	for _, f := range e.flights {
		if f.req.TPOTSLOMs > 0 {
			slo = min(slo, f.req.TPOTSLOMs)
		}
		if !f.req.DispatchedAt.Before(scrapedAt) {
			unscraped++
		}
		if f.decoding && f.generated >= 2 {
			tpot += float64(f.lastAt.Sub(f.firstAt)) / float64(time.Millisecond) / float64(f.generated-1)
			streams++
		}
	}
	if math.IsInf(slo, 1) {
		slo = 0
	}
	s.RunningTPOTMs = 0
	if streams > 0 {
		s.RunningTPOTMs = tpot / float64(streams)
	}
	s.InflightRequests, s.DispatchedSinceScrape, s.PrefillTokensInFlight, s.DecodeTokensInFlight, s.MinRunningTPOTSLOMs =
		int64(len(e.flights)), unscraped, e.prefill, e.decode, slo
}

// Discount takes request id's flight on endpoint, if any, out of s as Fill filled it with
// scrapedAt: the state the endpoint would have without it (in flight, dispatched since the scrape,
// its prompt or its remaining output tokens). The tightest TPOT objective and the rates stay.
// A disaggregated request's prefill decision judges its decode endpoint, already dispatched to,
// as the request would find it served whole.
func (t *Ledger) Discount(endpoint, id string, scrapedAt time.Time, s *sdk.EndpointState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.eps[endpoint]
	if e == nil {
		return
	}
	f := e.flights[id]
	if f == nil {
		return
	}
	s.InflightRequests--
	if !f.req.DispatchedAt.Before(scrapedAt) {
		s.DispatchedSinceScrape--
	}
	if f.decoding {
		s.DecodeTokensInFlight -= f.remaining()
	} else {
		s.PrefillTokensInFlight -= f.req.PrefillTokens
	}
}

// Requests is how many requests are in flight on endpoint.
func (t *Ledger) Requests(endpoint string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.eps[endpoint]; e != nil {
		return len(e.flights)
	}
	return 0
}

// startRate is the first tokens a second over the last startsKept: startsKept − 1 intervals over
// the time they span; 0 before startsKept, or when they span no time (a clock that did not move).
// It does not decay while nothing starts: an endpoint idle for lack of requests can still start
// them as fast, and the idle endpoint has room anyway.
func (e *endpoint) startRate() float64 {
	if e.seen < startsKept {
		return 0
	}
	oldest, newest := e.starts[e.next], e.starts[(e.next+startsKept-1)%startsKept]
	span := newest.Sub(oldest).Seconds()
	if span <= 0 {
		return 0
	}
	return float64(startsKept-1) / span
}
