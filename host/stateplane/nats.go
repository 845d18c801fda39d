package stateplane

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// natsLink publishes on a NATS connection.
type natsLink struct{ nc *nats.Conn }

func (l natsLink) publish(subject string, data []byte) error { return l.nc.Publish(subject, data) }

// live is a started plane's connection and tickers.
type live struct {
	nc   *nats.Conn
	subs []*nats.Subscription
	stop chan struct{}
	done sync.WaitGroup
}

// Options are the connection options a plane sets, before the caller's (credentials, TLS): no
// echo of its own messages, reconnection forever every 100 ms (a partition ends within that of
// the server's return), no buffering while disconnected (the snapshot after reconnecting makes
// good what was not sent), and a ping every second so that a silent network is noticed in 3 s.
func (p *Plane) options() []nats.Option {
	return []nats.Option{
		nats.Name("foresight " + p.cfg.Replica), nats.NoEcho(),
		nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.ReconnectJitter(50*time.Millisecond, time.Second),
		nats.ReconnectBufSize(-1), nats.RetryOnFailedConnect(true),
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { p.disconnected(err) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { p.reconnected(nc) }),
		nats.ConnectHandler(func(nc *nats.Conn) { p.reconnected(nc) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			p.cfg.Log.Debug().Err(err).Msg("state plane: NATS connection error")
		}),
	}
}

// Start connects the plane to the NATS servers at url (a comma-separated list), subscribes and
// starts its snapshots and peer expiry. A server that cannot be reached yet is retried in the
// background (the plane works alone meanwhile, Stats.Connected false). Close stops it.
func (p *Plane) Start(url string, opts ...nats.Option) error {
	if p.cfg.Manual {
		return errors.New("stateplane: a manual plane is started with StartManual")
	}
	nc, err := nats.Connect(url, append(p.options(), opts...)...)
	if err != nil {
		return fmt.Errorf("stateplane: connecting to %s: %w", url, err)
	}
	l := &live{nc: nc, stop: make(chan struct{})}
	if err := p.subscribe(l, func(m *nats.Msg) { p.receive(m.Data) }); err != nil {
		nc.Close()
		return err
	}
	p.mu.Lock()
	p.link, p.live = natsLink{nc}, l
	p.mu.Unlock()
	l.done.Add(1)
	go p.tick(l)
	if nc.IsConnected() {
		_ = nc.FlushTimeout(time.Second) // the server has the subscriptions before Start returns
		p.reconnected(nc)
	}
	return nil
}

// subscribe subscribes to the replicas' subjects with handle, and to the requests for snapshots.
func (p *Plane) subscribe(l *live, handle nats.MsgHandler) error {
	state, sync := p.Subjects()
	s, err := l.nc.Subscribe(state, handle)
	if err != nil {
		return fmt.Errorf("stateplane: subscribing to %s: %w", state, err)
	}
	l.subs = append(l.subs, s)
	if s, err = l.nc.Subscribe(sync, func(m *nats.Msg) {
		if string(m.Data) != p.cfg.Replica {
			p.Snapshot(p.cfg.Now())
		}
	}); err != nil {
		return fmt.Errorf("stateplane: subscribing to %s: %w", sync, err)
	}
	l.subs = append(l.subs, s)
	// A slow consumer loses messages rather than the connection: the snapshots repair it.
	for _, s := range l.subs {
		_ = s.SetPendingLimits(1<<16, 64<<20)
	}
	return nil
}

// receive applies a live message at the router's clock.
func (p *Plane) receive(data []byte) {
	now := p.cfg.Now()
	if p.cfg.Propagation != nil {
		if h, err := peekHeader(data); err == nil {
			p.cfg.Propagation(now.Sub(time.Unix(0, h.sentAt)))
		}
	}
	switch err := p.peers.apply(data, now); {
	case errors.Is(err, errGap):
		p.requestSync()
	case err != nil:
		p.cfg.Log.Debug().Err(err).Msg("state plane: a message not applied")
	}
}

// tick publishes a snapshot every SnapshotInterval and forgets silent peers.
func (p *Plane) tick(l *live) {
	defer l.done.Done()
	t := time.NewTicker(p.cfg.SnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			now := p.cfg.Now()
			if l.nc.IsConnected() {
				p.Snapshot(now)
			}
			for _, id := range p.peers.expire(now) {
				p.cfg.Log.Warn().Str("peer", id).Dur("timeout", p.cfg.PeerTimeout).
					Msg("state plane: a replica went silent; its requests in flight are forgotten")
			}
		}
	}
}

// requestSync asks every peer for a snapshot.
func (p *Plane) requestSync() {
	p.mu.Lock()
	l := p.live
	p.mu.Unlock()
	if l != nil {
		_, sync := p.Subjects()
		_ = l.nc.Publish(sync, []byte(p.cfg.Replica))
	}
}

// disconnected: the replica can no longer tell which of its peers' requests end, so it forgets
// them all and works on its own view until it is back.
func (p *Plane) disconnected(err error) {
	n := p.peers.partition()
	p.cfg.Log.Warn().Err(err).Int("peer_requests_forgotten", n).
		Msg("state plane: disconnected from NATS; routing on this replica's own requests until it is back")
}

// reconnected: the replica publishes its snapshot and asks the others for theirs, so that every
// view converges within a round trip.
func (p *Plane) reconnected(nc *nats.Conn) {
	p.peers.rejoin()
	p.cfg.Log.Info().Str("server", nc.ConnectedUrlRedacted()).Msg("state plane: connected to NATS")
	p.requestSync()
	p.Snapshot(p.cfg.Now())
}

// Close stops the plane: its tickers, subscriptions and connection (the last events are flushed
// first). The peers' requests stay in the ledger until the account's owner drops it.
func (p *Plane) Close() {
	p.mu.Lock()
	l := p.live
	p.live = nil
	if p.manual != nil {
		_ = p.manual.sub.Unsubscribe()
		p.manual = nil
	}
	if l != nil {
		p.flushLocked(p.cfg.Now())
	}
	p.link = nil
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	if l == nil {
		return
	}
	close(l.stop)
	l.done.Wait()
	if l.nc.IsConnected() {
		_ = l.nc.FlushTimeout(time.Second)
	}
	l.nc.Close()
}

// Connected reports whether the plane's connection is up.
func (p *Plane) Connected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live != nil && p.live.nc.IsConnected()
}
