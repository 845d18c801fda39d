package stateplane

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/prefix"
	"github.com/foresight-router/foresight/internal/wire"
)

// peers is what a replica knows of the others: their requests in flight, applied to its ledger
// and prefix index under IDs of their own.
type peers struct {
	p      *Plane
	mu     sync.Mutex
	ledger *inflight.Ledger
	index  *prefix.Index
	byID   map[string]*peer
	counts Stats // the receiving side's counters
	// cut is set while the plane is disconnected: messages still queued from before are
	// dropped, or they would bring back the peers just forgotten (the snapshots that follow the
	// reconnection bring them back right).
	cut bool
}

// peer is one other replica, as of its last message.
type peer struct {
	id          string
	incarnation uint64
	seq         uint64
	heard       time.Time // by this replica's clock
	flights     map[uint64]*remote
	// building is the snapshot being received (epoch, entries by key); nil between them.
	building map[uint64]entry
	epoch    uint64
}

// remote is a peer's request in flight, as this replica's ledger and index hold it.
type remote struct {
	flight    *inflight.Flight
	sent      *prefix.Sent
	decoding  bool
	generated int64
}

func (ps *peers) init(p *Plane) { ps.p, ps.byID = p, map[string]*peer{} }

func (ps *peers) attach(ledger *inflight.Ledger, index *prefix.Index) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.ledger, ps.index = ledger, index
}

func (ps *peers) stats(s *Stats) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r := ps.counts
	s.Received, s.Applied, s.Invalid, s.Gaps = r.Received, r.Applied, r.Invalid, r.Gaps
	s.Snapshots, s.Expired, s.Partitions, s.Dropped = r.Snapshots, r.Expired, r.Partitions, r.Dropped
	s.Peers = len(ps.byID)
	for _, pe := range ps.byID {
		s.PeerFlights += len(pe.flights)
	}
}

// errGap is what apply returns when a message was missing before this one: the caller asks the
// peers for snapshots.
var errGap = errors.New("a gap in a peer's sequence")

// apply applies one message at now (this replica's clock, or the simulator's virtual time). A
// message of this replica's own is ignored. It returns errGap when messages of the peer were lost
// (the message is applied anyway: its events are newer than what was lost, and the peer's next
// snapshot repairs the rest), or the decoding error of an invalid message.
func (ps *peers) apply(data []byte, now time.Time) error {
	r := wire.NewReader(data, maxString)
	h, err := readHeader(r)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.counts.Received++
	if err != nil {
		ps.counts.Invalid++
		return err
	}
	if h.replica == ps.p.cfg.Replica && h.incarnation == ps.p.incarnation || ps.ledger == nil || ps.cut {
		return nil
	}
	pe := ps.byID[h.replica]
	var gap bool
	switch {
	case pe == nil || pe.incarnation != h.incarnation:
		// A new peer, or one that started again: what it had in flight before is gone.
		if pe != nil {
			ps.forget(pe)
		}
		pe = &peer{id: h.replica, incarnation: h.incarnation, flights: map[uint64]*remote{}}
		ps.byID[h.replica] = pe
	case h.seq <= pe.seq:
		return nil // a duplicate
	case h.seq != pe.seq+1:
		gap = true
		ps.counts.Gaps += h.seq - pe.seq - 1
		pe.building = nil // a snapshot part may be among the lost
	}
	pe.seq, pe.heard = h.seq, now
	if err := ps.events(pe, r, now); err != nil {
		ps.counts.Invalid++
		return err
	}
	if gap {
		return errGap
	}
	return nil
}

// events applies a message's events; the caller holds mu.
func (ps *peers) events(pe *peer, r *wire.Reader, now time.Time) error {
	for r.Len() > 0 {
		k := kind(r.Byte())
		switch k {
		case kindDispatch:
			var f flightFields
			readFlight(r, &f)
			blocks := r.U64s(maxBlocks)
			if r.Err() == nil {
				ps.dispatch(pe, &f, blocks, now)
			}
		case kindFirst:
			id := r.Uvarint()
			if rf := pe.flights[id]; rf != nil && r.Err() == nil && !rf.decoding {
				rf.flight.FirstToken(now)
				rf.decoding, rf.generated = true, 1
			}
		case kindPrefill:
			id, tokens := r.Uvarint(), uvarint63(r)
			if rf := pe.flights[id]; rf != nil && r.Err() == nil {
				rf.flight.Prefill(tokens)
			}
		case kindFinish:
			id, answer := r.Uvarint(), r.U64s(maxBlocks)
			if rf := pe.flights[id]; rf != nil && r.Err() == nil {
				rf.sent.Finish(answer)
				rf.flight.Finish()
				delete(pe.flights, id)
			}
		case kindSnapshot:
			return ps.snapshot(pe, r, now)
		default:
			r.Fail(errors.New("an event of an unknown kind"))
		}
		if r.Err() != nil {
			return r.Err()
		}
		ps.counts.Applied++
	}
	return nil
}

// dispatch adds a peer's request; the caller holds mu.
func (ps *peers) dispatch(pe *peer, f *flightFields, blocks []uint64, now time.Time) {
	if old := pe.flights[f.key]; old != nil {
		return // a dispatch seen twice: the snapshot that follows a gap may have brought it
	}
	if len(pe.flights) >= ps.p.cfg.MaxPeerFlights {
		ps.counts.Dropped++
		return
	}
	fl := ps.ledger.Dispatch(f.endpoint, inflight.Request{ID: pe.id + "/" + strconv.FormatUint(f.key, 10), PrefillTokens: f.prefill,
		OutputTokens: f.output, TPOTSLOMs: f.tpotSLOMs, DispatchedAt: now})
	if fl == nil {
		return
	}
	pe.flights[f.key] = &remote{flight: fl, sent: ps.index.Send(f.endpoint, blocks)}
}

// snapshot reads a snapshot part; on the last, the peer's requests become the snapshot's: those
// it lacks end, those it adds start, the others take its progress. The caller holds mu.
func (ps *peers) snapshot(pe *peer, r *wire.Reader, now time.Time) error {
	epoch, last := r.Uvarint(), r.Byte() == 1
	if pe.building == nil || pe.epoch != epoch {
		pe.building, pe.epoch = map[uint64]entry{}, epoch
	}
	for r.Len() > 0 && r.Err() == nil {
		var e entry
		readEntry(r, &e)
		if r.Err() == nil && len(pe.building) < ps.p.cfg.MaxPeerFlights {
			pe.building[e.key] = e
		}
	}
	if r.Err() != nil {
		pe.building = nil
		return r.Err()
	}
	if !last {
		return nil
	}
	for id, rf := range pe.flights {
		if _, ok := pe.building[id]; !ok {
			rf.flight.Finish()
			delete(pe.flights, id)
		}
	}
	for id, e := range pe.building {
		rf := pe.flights[id]
		if rf == nil {
			ps.dispatch(pe, &e.flightFields, nil, now)
			if rf = pe.flights[id]; rf == nil {
				continue
			}
		}
		if e.decoding && !rf.decoding {
			rf.flight.FirstToken(now)
			rf.decoding, rf.generated = true, 1
		}
		if !e.decoding {
			rf.flight.Prefill(e.prefill)
		}
		if e.generated > rf.generated {
			rf.flight.Tokens(e.generated, now)
			rf.generated = e.generated
		}
	}
	pe.building = nil
	ps.counts.Snapshots++
	return nil
}

// forget ends every request of pe and drops it; the caller holds mu.
func (ps *peers) forget(pe *peer) {
	for _, rf := range pe.flights {
		rf.flight.Finish()
	}
	delete(ps.byID, pe.id)
}

// rejoin ends a partition: messages apply again.
func (ps *peers) rejoin() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.cut = false
}

// expire forgets the peers not heard from since now − PeerTimeout, and returns their IDs.
func (ps *peers) expire(now time.Time) []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var gone []string
	for id, pe := range ps.byID {
		if now.Sub(pe.heard) > ps.p.cfg.PeerTimeout {
			ps.forget(pe)
			ps.counts.Expired++
			gone = append(gone, id)
		}
	}
	return gone
}

// partition forgets every peer: this replica lost its connection and can no longer tell which of
// their requests end. It returns how many requests were forgotten.
func (ps *peers) partition() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.cut = true
	n := 0
	for _, pe := range ps.byID {
		n += len(pe.flights)
		ps.forget(pe)
	}
	ps.counts.Partitions++
	return n
}
