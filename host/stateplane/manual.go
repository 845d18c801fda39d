package stateplane

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// inbox keeps a manual plane's received messages until Deliver applies them.
type inbox struct {
	nc   *nats.Conn
	sub  *nats.Subscription
	mu   sync.Mutex
	cond *sync.Cond
	msgs []received
	// seen is the newest sequence number received of each replica (of its incarnation).
	seen map[string]uint64
}

type received struct {
	data    []byte
	sentAt  time.Time
	replica string
	seq     uint64
}

// StartManual subscribes a manual plane (the simulator's) on nc, a connection the caller owns:
// messages are kept as they arrive and applied by Deliver; Flush and Snapshot publish. Nothing
// runs by itself: no snapshots, no expiry.
func (p *Plane) StartManual(nc *nats.Conn) error {
	if !p.cfg.Manual {
		return errors.New("stateplane: a live plane is started with Start")
	}
	in := &inbox{nc: nc, seen: map[string]uint64{}}
	in.cond = sync.NewCond(&in.mu)
	state, _ := p.Subjects()
	sub, err := nc.Subscribe(state, func(m *nats.Msg) {
		h, err := peekHeader(m.Data)
		if err != nil || h.replica == p.cfg.Replica {
			return
		}
		in.mu.Lock()
		in.msgs = append(in.msgs, received{data: m.Data, sentAt: time.Unix(0, h.sentAt), replica: h.replica, seq: h.seq})
		in.seen[h.replica] = max(in.seen[h.replica], h.seq)
		in.mu.Unlock()
		in.cond.Broadcast()
	})
	if err != nil {
		return fmt.Errorf("stateplane: subscribing to %s: %w", state, err)
	}
	_ = sub.SetPendingLimits(-1, -1) // the simulator waits for every message
	in.sub = sub
	p.mu.Lock()
	p.link, p.manual = natsLink{nc}, in
	p.mu.Unlock()
	return nil
}

// Published returns the sequence number of the plane's last message.
func (p *Plane) Published() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

// Replica returns the plane's replica ID.
func (p *Plane) Replica() string { return p.cfg.Replica }

// WaitFor blocks until the manual plane has received replica's messages up to seq, or timeout
// passed (an error: a message lost on loopback is a broken run).
func (p *Plane) WaitFor(replica string, seq uint64, timeout time.Duration) error {
	in := p.manual
	if in == nil || seq == 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, in.cond.Broadcast)
	defer timer.Stop()
	in.mu.Lock()
	defer in.mu.Unlock()
	for in.seen[replica] < seq {
		if time.Now().After(deadline) {
			return fmt.Errorf("stateplane: %s did not receive %s's message %d within %s", p.cfg.Replica, replica, seq, timeout)
		}
		in.cond.Wait()
	}
	return nil
}

// Deliver applies the received messages sent at or before now − delay: by time sent, then by
// replica and sequence number, whatever order they arrived in (which may differ from run to run
// between replicas), so that runs repeat.
func (p *Plane) Deliver(now time.Time, delay time.Duration) {
	in := p.manual
	if in == nil {
		return
	}
	in.mu.Lock()
	var due []received
	keep := in.msgs[:0]
	for _, m := range in.msgs {
		if !m.sentAt.Add(delay).After(now) {
			due = append(due, m)
		} else {
			keep = append(keep, m)
		}
	}
	in.msgs = keep
	in.mu.Unlock()
	slices.SortStableFunc(due, func(a, b received) int {
		return cmp.Or(a.sentAt.Compare(b.sentAt), cmp.Compare(a.replica, b.replica), cmp.Compare(a.seq, b.seq))
	})
	for _, m := range due {
		if err := p.peers.apply(m.data, m.sentAt.Add(delay)); err != nil {
			p.cfg.Log.Debug().Err(err).Msg("state plane: a message not applied")
		}
	}
}

// Expire forgets the peers not heard from since now − PeerTimeout (the manual plane's clock).
func (p *Plane) Expire(now time.Time) { p.peers.expire(now) }
