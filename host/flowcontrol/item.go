// Package flowcontrol is the router-side queue of flow control: requests that would find every
// server full wait here, in priority bands, fairly across flows, in a chosen order, bounded in
// requests, bytes and waiting time, and leave it exactly once — popped for dispatch, expired,
// removed, or refused at the door with a reason. It is pure logic: times are arguments, there are
// no goroutines and no locks; the caller serialises every call (one mutex around the Queue, or one
// owning goroutine). Flow control's two stages live elsewhere: the ordering policy (an
// sdk.Orderer) gives each item its key before the push, and the saturation detector (an
// sdk.Detector) decides when to queue and when to pop; the wiring into the proxy, ext_proc and
// the simulator lives with them.
package flowcontrol

import (
	"fmt"
	"time"
)

// Item is one request waiting for dispatch.
type Item struct {
	// ID names the request; it is unique among queued items and is what Remove takes.
	ID string
	// Band is the request's priority: a higher band is always served before a lower one.
	Band int
	// Flow is the fairness key within a band (tenant, session or objective, as the caller decides):
	// flows of one band take turns. The empty string is a flow like any other.
	Flow string
	// Arrival is when the request reached the router; the band's TTL counts from it, and it
	// breaks ties between equal ranks.
	Arrival time.Time
	// Rank orders a flow's items, lower first (the ordering policy's sdk.OrderKey.Rank).
	Rank int64
	// HopelessAfter, when not zero, makes the item hopeless once now + the queue's estimated wait
	// passes it: it then leaves after every item of its flow that is not (the ordering policy's
	// sdk.OrderKey.HopelessAfter).
	HopelessAfter time.Time
	// Bytes is the request's size, counted against its band's byte capacity.
	Bytes int64
}

// Reason says why an item left the queue without being dispatched. Its String is a stable,
// kebab-case label for metrics and for the reason header of the answer.
type Reason uint8

const (
	// ReasonBandFull refuses a push into a band that already holds its MaxRequests items.
	ReasonBandFull Reason = iota + 1
	// ReasonBandBytes refuses a push that would take its band past MaxBytes.
	ReasonBandBytes
	// ReasonTooLarge refuses an item larger than its band's MaxBytes on its own: unlike the
	// two above, waiting and retrying cannot help it.
	ReasonTooLarge
	// ReasonTTL sheds an item that waited its band's TTL without being dispatched.
	ReasonTTL
)

func (r Reason) String() string {
	switch r {
	case ReasonBandFull:
		return "band-full"
	case ReasonBandBytes:
		return "band-bytes-full"
	case ReasonTooLarge:
		return "too-large"
	case ReasonTTL:
		return "ttl-expired"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Shed is an item that left the queue undispatched, and why.
type Shed struct {
	Item   Item
	Reason Reason
}

// RefusedError is Push's answer when the item is valid but its band has no room for it; the
// caller answers the request with Reason (a 429) instead of queueing it. Other Push errors mean
// the item itself is malformed.
type RefusedError struct {
	ID     string
	Band   int
	Reason Reason
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing request %q in band %d: %s", e.ID, e.Band, e.Reason)
}
