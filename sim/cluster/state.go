package cluster

import (
	"fmt"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// State makes the replicas share their dispatches as the live replicas' state plane does
// (host/stateplane), through a real NATS server, in virtual time: what a replica publishes at t
// its peers apply at t + Delay. Each replica also publishes a snapshot of its requests in flight
// every SnapshotInterval, which brings its peers their output counts.
type State struct {
	// URL is the NATS server's; Prefix starts the run's subjects (one a run, so that runs on
	// one server do not meet).
	URL, Prefix string
	// Delay is a message's time from its publication to its application by every peer: the
	// live plane's batching (state.publishInterval) plus its propagation.
	Delay time.Duration
	// SnapshotInterval is the time between two snapshots (stateplane.DefaultSnapshotInterval
	// when 0).
	SnapshotInterval time.Duration
}

// waitTimeout bounds the wait for a message on loopback; past it the run fails.
const waitTimeout = 10 * time.Second

// sharing is a run's state plane: a manual plane per replica, each on its own connection.
type sharing struct {
	cfg          State
	conns        []*nats.Conn
	planes       []*stateplane.Plane
	nextSnapshot time.Duration
}

// newSharing connects a plane for each of views to cfg's server and attaches it to the view's
// ledger and index.
func newSharing(cfg State, views []*view) (_ *sharing, err error) {
	if cfg.SnapshotInterval <= 0 {
		cfg.SnapshotInterval = stateplane.DefaultSnapshotInterval
	}
	sh := &sharing{cfg: cfg, nextSnapshot: cfg.SnapshotInterval}
	defer func() {
		if err != nil {
			sh.close()
		}
	}()
	for i, v := range views {
		p, err := stateplane.New(stateplane.Config{Replica: "replica-" + strconv.Itoa(i), Prefix: cfg.Prefix, Manual: true,
			SnapshotInterval: cfg.SnapshotInterval, Log: zerolog.Nop()})
		if err != nil {
			return nil, err
		}
		nc, err := nats.Connect(cfg.URL, nats.Name("foresight simulation replica-"+strconv.Itoa(i)), nats.NoEcho())
		if err != nil {
			return nil, fmt.Errorf("state plane: connecting to %s: %w", cfg.URL, err)
		}
		sh.conns = append(sh.conns, nc)
		v.acct, v.plane = stateplane.NewAccount(v.inflight, v.prefix, p), p
		if err := p.StartManual(nc); err != nil {
			return nil, err
		}
		sh.planes = append(sh.planes, p)
	}
	for _, nc := range sh.conns {
		if err := nc.FlushTimeout(waitTimeout); err != nil { // every subscription is in place
			return nil, err
		}
	}
	return sh, nil
}

// deliver applies, on every replica, what its peers published up to now − Delay.
func (sh *sharing) deliver(now time.Duration) {
	if sh == nil {
		return
	}
	for _, p := range sh.planes {
		p.Deliver(Epoch.Add(now), sh.cfg.Delay)
	}
}

// publish publishes every replica's pending events as sent at now (and, when one is due, its
// snapshot), then waits until every peer has them, so that what a replica applies depends on
// virtual time only.
func (sh *sharing) publish(now time.Duration) error {
	if sh == nil {
		return nil
	}
	snapshot := now >= sh.nextSnapshot
	if snapshot {
		for sh.nextSnapshot <= now {
			sh.nextSnapshot += sh.cfg.SnapshotInterval
		}
	}
	published := make([]uint64, len(sh.planes))
	for i, p := range sh.planes {
		before := p.Published()
		if snapshot {
			p.Snapshot(Epoch.Add(now))
		} else {
			p.Flush(Epoch.Add(now))
		}
		if published[i] = p.Published(); published[i] != before {
			if err := sh.conns[i].FlushTimeout(waitTimeout); err != nil {
				return fmt.Errorf("state plane: publishing: %w", err)
			}
		}
	}
	for i, p := range sh.planes {
		for j, q := range sh.planes {
			if i != j {
				if err := p.WaitFor(q.Replica(), published[j], waitTimeout); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (sh *sharing) close() {
	if sh == nil {
		return
	}
	for _, p := range sh.planes {
		p.Close()
	}
	for _, nc := range sh.conns {
		nc.Close()
	}
}
