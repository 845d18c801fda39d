// Package tracker keeps the router's own, always fresh account of what it has in flight on each
// endpoint: requests dispatched and not finished, uncached prompt tokens not yet past their first
// token, output tokens still to generate, and the tightest TPOT objective among them. The live
// router and the simulator both fill a cycle's router-side state from it; engine gauges come from
// scraping instead and are as old as the last scrape.
package tracker

import (
	"math"
	"sync"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Request is what the tracker needs to know about a dispatched request.
type Request struct {
	ID string
	// PrefillTokens are the prompt tokens the endpoint must compute (not expected to be cached).
	PrefillTokens int64
	// OutputTokens is the expected number of output tokens (max_tokens, or an estimate).
	OutputTokens int64
	// TPOTSLOMs is the request's TPOT objective; 0 when it has none (it then masks nobody's).
	TPOTSLOMs float64
}

type flight struct {
	req       Request
	generated int64
	decoding  bool // past its first token
}

type endpoint struct {
	flights map[string]*flight
	prefill int64 // sum of PrefillTokens of flights not yet decoding
	decode  int64 // sum of remaining output tokens of decoding flights
}

// Tracker is safe for concurrent use.
type Tracker struct {
	mu  sync.Mutex
	eps map[string]*endpoint
}

// New returns an empty tracker.
func New() *Tracker { return &Tracker{eps: map[string]*endpoint{}} }

func (t *Tracker) ep(name string) *endpoint {
	e := t.eps[name]
	if e == nil {
		e = &endpoint{flights: map[string]*flight{}}
		t.eps[name] = e
	}
	return e
}

// Dispatch records that r was sent to endpoint. A second Dispatch of the same id there is ignored.
func (t *Tracker) Dispatch(endpoint string, r Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.ep(endpoint)
	if _, dup := e.flights[r.ID]; dup {
		return
	}
	e.flights[r.ID] = &flight{req: r}
	e.prefill += r.PrefillTokens
}

// FirstToken records that request id on endpoint produced its first token: its prompt is done.
func (t *Tracker) FirstToken(endpoint, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, f := t.flight(endpoint, id)
	if f == nil || f.decoding {
		return
	}
	f.decoding, f.generated = true, 1
	e.prefill -= f.req.PrefillTokens
	e.decode += remaining(f)
}

// Tokens records that request id on endpoint has generated n output tokens so far.
func (t *Tracker) Tokens(endpoint, id string, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, f := t.flight(endpoint, id)
	if f == nil || !f.decoding || n <= f.generated {
		return
	}
	e.decode -= remaining(f)
	f.generated = n
	e.decode += remaining(f)
}

// Finish forgets request id on endpoint (completed, failed or cancelled).
func (t *Tracker) Finish(endpoint, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, f := t.flight(endpoint, id)
	if f == nil {
		return
	}
	if f.decoding {
		e.decode -= remaining(f)
	} else {
		e.prefill -= f.req.PrefillTokens
	}
	delete(e.flights, id)
}

// flight returns the request id in flight on endpoint, or nil; the caller holds mu.
func (t *Tracker) flight(endpoint, id string) (*endpoint, *flight) {
	e := t.eps[endpoint]
	if e == nil {
		return nil, nil
	}
	return e, e.flights[id]
}

func remaining(f *flight) int64 { return max(f.req.OutputTokens-f.generated, 0) }

// Fill sets the router-side fields of s for endpoint: InflightRequests, PrefillTokensInFlight,
// DecodeTokensInFlight and MinRunningTPOTSLOMs (0 when no request there has a TPOT objective).
func (t *Tracker) Fill(endpoint string, s *sdk.EndpointState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.eps[endpoint]
	if e == nil {
		s.InflightRequests, s.PrefillTokensInFlight, s.DecodeTokensInFlight, s.MinRunningTPOTSLOMs = 0, 0, 0, 0
		return
	}
	slo := math.Inf(1)
	for _, f := range e.flights {
		if f.req.TPOTSLOMs > 0 {
			slo = min(slo, f.req.TPOTSLOMs)
		}
	}
	if math.IsInf(slo, 1) {
		slo = 0
	}
	s.InflightRequests, s.PrefillTokensInFlight, s.DecodeTokensInFlight, s.MinRunningTPOTSLOMs =
		int64(len(e.flights)), e.prefill, e.decode, slo
}
