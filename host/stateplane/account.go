package stateplane

import (
	"time"

	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/prefix"
)

// Account is one replica's record of its own dispatches: its in-flight ledger and prefix index,
// and the plane that shares them with the other replicas (nil: a router alone). The proxy and
// the simulator record through it, so what a replica knows and what it shares cannot differ.
type Account struct {
	Ledger *inflight.Ledger
	Prefix *prefix.Index
	plane  *Plane
}

// NewAccount returns an account over ledger and index; with a plane, the peers' requests are
// applied to them too (a plane serves one account).
func NewAccount(ledger *inflight.Ledger, index *prefix.Index, plane *Plane) *Account {
	if plane != nil {
		plane.peers.attach(ledger, index)
	}
	return &Account{Ledger: ledger, Prefix: index, plane: plane}
}

// Plane returns the account's plane, nil without one.
func (a *Account) Plane() *Plane { return a.plane }

// Dispatch records that r was sent to endpoint with a prompt of these chained block hashes
// (which must not change while the flight is in use), and returns its flight. A second dispatch
// of an ID in flight on the endpoint returns a flight that records nothing in the ledger, as
// inflight.Ledger.Dispatch does.
func (a *Account) Dispatch(endpoint string, r inflight.Request, blocks []uint64) *Flight {
	f := &Flight{a: a, flight: a.Ledger.Dispatch(endpoint, r), sent: a.Prefix.Send(endpoint, blocks)}
	if a.plane != nil && f.flight != nil {
		f.key = a.plane.dispatched(endpoint, &r, blocks, f.flight)
	}
	return f
}

// Flight is one request an Account dispatched. Its methods do nothing on a nil Flight.
type Flight struct {
	a      *Account
	key    uint64           // the plane's, 0 without one
	flight *inflight.Flight // nil: a duplicate dispatch, not in the ledger
	sent   *prefix.Sent
	// answered is the answer's blocks, given by Answer and shared when the flight finishes.
	answered []uint64
}

// FirstToken records that the request produced its first token at at.
func (f *Flight) FirstToken(at time.Time) {
	if f == nil || f.flight == nil {
		return
	}
	f.flight.FirstToken(at)
	if f.key != 0 {
		f.a.plane.firstToken(f.key)
	}
}

// Tokens records that the request had generated n output tokens at at. Peers learn the count
// from the next snapshot.
func (f *Flight) Tokens(n int64, at time.Time) {
	if f != nil {
		f.flight.Tokens(n, at)
	}
}

// Prefill sets the prompt tokens the endpoint computes, before the first token.
func (f *Flight) Prefill(tokens int64) {
	if f == nil || f.flight == nil {
		return
	}
	f.flight.Prefill(tokens)
	if f.key != 0 {
		f.a.plane.prefill(f.key, tokens)
	}
}

// Answer records that the endpoint finished the prompt with an answer whose full blocks continue
// the prompt's chain with these hashes (prefix.Sent.Finish); peers learn them when the flight
// finishes. Call it before Finish, from the goroutine that calls Finish.
func (f *Flight) Answer(blocks []uint64) {
	if f == nil {
		return
	}
	f.sent.Finish(blocks)
	f.answered = blocks
}

// Finish forgets the request (completed, failed or cancelled); peers learn it, with the answer's
// blocks, once.
func (f *Flight) Finish() {
	if f == nil || f.flight == nil {
		return
	}
	if f.key != 0 {
		f.a.plane.finished(f.key, f.answered)
	}
	f.flight.Finish()
}
