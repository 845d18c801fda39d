package kvevents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"
)

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Address is the endpoint's PUB address, e.g. "tcp://10.0.0.5:5557" (or ipc://path); the
	// subscriber connects to it.
	Address string
	// Replay is the endpoint's ROUTER address serving missed batches; "" for none.
	Replay string
	// Topic is the subscription prefix ("" for all messages).
	Topic string
	// Handle is called for each message, in sequence order, from Run's goroutine. It must not
	// keep m, or anything in m.Batch, after returning: the next message is decoded into it.
	Handle func(m *Message)
	// Log receives connection changes, failed replays and undecodable payloads (the latter at
	// most once per decodeLogEvery).
	Log zerolog.Logger
	// ReplayTimeout bounds one replay request, from dialling to the end marker; 0 means 1 s.
	// While it runs the subscription is not read (its messages wait in the socket).
	ReplayTimeout time.Duration
}

// Message is one batch handed to SubscriberConfig.Handle, with what the subscriber knows of the
// batches before it.
type Message struct {
	// Batch is the decoded batch, Seq set.
	Batch Batch
	// Missed is how many batches were lost just before this one: a sequence gap that replay did
	// not fill, and batches whose payload did not decode. 0 normally.
	Missed uint64
	// Restart is set when the sequence went back: the publisher restarted (vLLM's begins at 0),
	// so consumers drop what they knew of the endpoint before applying this batch.
	Restart bool
	// First is set on the first message since the subscriber (re)connected. When nothing was
	// received before, nothing is known about earlier batches and no gap is counted (ZeroMQ's slow
	// joiner: a new subscription starts at whatever the publisher sends next). After a reconnect
	// the sequence is checked against the last batch received before: a gap is replayed or
	// reported in Missed, and a step back is a Restart.
	First bool
}

// SubscriberStats are a Subscriber's counters since it was made.
type SubscriberStats struct {
	Messages     uint64 // messages handled
	Events       uint64 // events in them
	BlockEvents  uint64 // block hashes in their Stored and Removed events
	Gaps         uint64 // sequence gaps seen on the subscription (filled or not)
	Missed       uint64 // batches lost: the sum of the messages' Missed
	Replayed     uint64 // messages that came from replay
	Restarts     uint64 // publisher restarts seen
	DecodeErrors uint64 // messages whose frames or payload did not decode
	Connects     uint64 // connections established
	Connected    bool   // whether connected now
}

// Subscriber follows one engine's KV-event publisher.
type Subscriber struct {
	cfg     SubscriberConfig
	topic   []byte
	pub     endpoint
	replay  *endpoint
	timeout time.Duration
	log     zerolog.Logger
	running atomic.Bool

	stats struct {
		messages, events, blockEvents, gaps, missed, replayed, restarts, decodeErrors, connects atomic.Uint64
		connected                                                                               atomic.Bool
	}

	// Run's sequence state. last is the last sequence accounted for (handled, or lost to a bad
	// payload), when known; connLast the last seen on the current connection, when connSeen.
	known, connSeen bool
	last, connLast  uint64
	// What the next message handled carries: lost batches, a restart, a new connection.
	lost           uint64
	restart, first bool
	msg, rmsg      Message // decoded into: from the subscription, from replay

	lastDecodeLog time.Time
	quietDecode   uint64 // decode errors not logged since lastDecodeLog
}

// Redialling backs off from minRedial to maxRedial, doubling, with ±20% jitter.
const (
	minRedial = 50 * time.Millisecond
	maxRedial = 2 * time.Second
	// decodeLogEvery spaces the logs of undecodable payloads.
	decodeLogEvery = 10 * time.Second
)

// NewSubscriber returns a subscriber for cfg, which it checks: Address (and Replay when given)
// must be tcp://host:port or ipc://path, and Handle set.
func NewSubscriber(cfg SubscriberConfig) (*Subscriber, error) {
	if cfg.Handle == nil {
		return nil, errors.New("kvevents: SubscriberConfig.Handle is nil")
	}
	pub, err := parseEndpoint(cfg.Address, false)
	if err != nil {
		return nil, err
	}
	s := &Subscriber{cfg: cfg, topic: []byte(cfg.Topic), pub: pub, timeout: cfg.ReplayTimeout}
	if cfg.Replay != "" {
		rep, err := parseEndpoint(cfg.Replay, false)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		s.replay = &rep
	}
	if s.timeout <= 0 {
		s.timeout = time.Second
	}
	s.log = cfg.Log.With().Str("kv_events", cfg.Address).Logger()
	return s, nil
}

// Stats returns the subscriber's counters. It is safe to call at any time.
func (s *Subscriber) Stats() SubscriberStats {
	st := &s.stats
	return SubscriberStats{
		Messages: st.messages.Load(), Events: st.events.Load(), BlockEvents: st.blockEvents.Load(),
		Gaps: st.gaps.Load(), Missed: st.missed.Load(), Replayed: st.replayed.Load(),
		Restarts: st.restarts.Load(), DecodeErrors: st.decodeErrors.Load(),
		Connects: st.connects.Load(), Connected: st.connected.Load(),
	}
}

// Run connects to the publisher, subscribes, and hands each message to Handle until ctx ends,
// then returns nil. While the publisher is down, refuses or drops the connection it redials,
// backing off to maxRedial, and never gives up. A message that does not decode is logged and
// counted (DecodeErrors, and Missed on the next message), never fatal. Run uses no goroutine of
// its own but its caller's: everything it starts has ended when it returns. It may run once at a
// time; a second concurrent call returns an error.
func (s *Subscriber) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("kvevents: Subscriber.Run is already running")
	}
	defer s.running.Store(false)
	delay, failures := minRedial, 0
	for ctx.Err() == nil {
		w, err := dial(ctx, s.pub, zmq4.Sub)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if failures++; failures == 1 {
				s.log.Info().Err(err).Msg("kv events: cannot reach the publisher; retrying")
			} else {
				s.log.Debug().Err(err).Int("attempts", failures).Msg("kv events: cannot reach the publisher")
			}
			sleep(ctx, delay)
			delay = min(2*delay, maxRedial)
			continue
		}
		failures = 0
		start := time.Now()
		received, err := s.serve(ctx, w)
		if ctx.Err() != nil {
			break
		}
		s.log.Warn().Err(err).Msg("kv events: lost the publisher; reconnecting")
		// A connection that worked resets the backoff; one dropped straight away (a publisher
		// accepting then closing) keeps it growing, so as not to hammer it.
		if received > 0 || time.Since(start) > maxRedial {
			delay = minRedial
		}
		sleep(ctx, delay)
		delay = min(2*delay, maxRedial)
	}
	return nil
}

// sleep waits about d (±20%), or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(time.Duration(float64(d) * (0.8 + 0.4*rand.Float64())))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// serve subscribes on w and reads messages until the connection fails or ctx ends (which closes
// it), returning how many it read and the error that ended it.
func (s *Subscriber) serve(ctx context.Context, w *wire) (received int, err error) {
	defer w.close()
	stop := context.AfterFunc(ctx, func() { w.close() })
	defer stop()
	if err := w.send(append([]byte{1}, s.cfg.Topic...)); err != nil {
		return 0, err
	}
	s.stats.connects.Add(1)
	s.stats.connected.Store(true)
	defer s.stats.connected.Store(false)
	s.log.Info().Msg("kv events: subscribed")
	s.first, s.connSeen = true, false
	for {
		frames, err := w.readMsg()
		if err != nil {
			return received, err
		}
		received++
		s.receive(ctx, frames)
	}
}

// receive handles one message of the subscription: it checks the sequence, replays a gap when it
// can, decodes the batch and hands it on.
func (s *Subscriber) receive(ctx context.Context, frames [][]byte) {
	if len(frames) != 3 {
		s.decodeError(0, fmt.Errorf("kvevents: message of %d frames, want topic, sequence and payload", len(frames)))
		return
	}
	if len(frames[1]) != 8 {
		s.decodeError(0, fmt.Errorf("kvevents: sequence frame of %d bytes, want 8", len(frames[1])))
		return
	}
	if !bytes.HasPrefix(frames[0], s.topic) {
		return // a PUB filters by subscription; libzmq's SUB checks again
	}
	seq := be64(frames[1])
	switch {
	case !s.known: // the first message ever: a slow joiner starts anywhere
	case s.connSeen && seq <= s.connLast, !s.connSeen && seq <= s.last:
		// Back on one connection (which a PUB never does), or a new connection beginning at or
		// before what the last one had: what the last one carried came after its subscription,
		// and this one's after its own, later one, so only a restarted publisher numbers so.
		s.restart, s.lost = true, 0
		s.stats.restarts.Add(1)
	case seq <= s.last: // already handled from replay
		s.connSeen, s.connLast = true, seq
		return
	case seq > s.last+1:
		s.stats.gaps.Add(1)
		if s.replay != nil {
			s.fill(ctx)
		}
		if seq <= s.last { // replay covered it
			s.connSeen, s.connLast = true, seq
			return
		}
		s.lost += seq - s.last - 1
	}
	s.connSeen, s.connLast = true, seq
	s.known, s.last = true, seq
	if err := Decode(frames[2], &s.msg.Batch); err != nil {
		s.decodeError(seq, err)
		s.lost++
		return
	}
	s.deliver(&s.msg, seq)
}

// fill asks the replay socket for the batches after s.last and hands them on. A failure is
// logged; what it did not recover is counted by the caller as missed.
func (s *Subscriber) fill(ctx context.Context) {
	from := s.last + 1
	n, err := s.replayFrom(ctx, from)
	if err != nil && ctx.Err() == nil {
		s.log.Warn().Err(err).Uint64("from", from).Int("replayed", n).Msg("kv events: replay failed")
	}
}

// replayFrom requests the batches from seq from over a DEALER connection, within s.timeout, and
// hands on, in order, those after s.last; a hole in what it receives (the publisher no longer
// holding the start) counts as lost. It returns how many it handed on.
func (s *Subscriber) replayFrom(ctx context.Context, from uint64) (n int, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	w, err := dial(ctx, *s.replay, zmq4.Dealer)
	if err != nil {
		return 0, fmt.Errorf("kvevents: replay: %w", err)
	}
	defer w.close()
	stop := context.AfterFunc(ctx, func() { w.close() })
	defer stop()
	if err := w.send(nil, seqFrame(from)); err != nil {
		return 0, fmt.Errorf("kvevents: replay: %w", err)
	}
	for {
		frames, err := w.readMsg()
		switch {
		case err != nil && ctx.Err() != nil:
			return n, fmt.Errorf("kvevents: replay: no end within %v", s.timeout)
		case err != nil:
			return n, fmt.Errorf("kvevents: replay: %w", err)
		case len(frames) != 3 || len(frames[1]) != 8:
			return n, fmt.Errorf("kvevents: replay: message of %d frames, want empty, 8-byte sequence and payload", len(frames))
		}
		seq := be64(frames[1])
		switch {
		case seq == endSeq:
			return n, nil
		case seq <= s.last:
			continue
		case seq > s.last+1:
			s.lost += seq - s.last - 1
		}
		s.last = seq
		if err := Decode(frames[2], &s.rmsg.Batch); err != nil {
			s.decodeError(seq, err)
			s.lost++
			continue
		}
		s.stats.replayed.Add(1)
		n++
		s.deliver(&s.rmsg, seq)
	}
}

// deliver hands m, decoded, to Handle with what is pending (lost batches, restart, first).
func (s *Subscriber) deliver(m *Message, seq uint64) {
	m.Batch.Seq = seq
	m.Missed, m.Restart, m.First = s.lost, s.restart, s.first
	s.lost, s.restart, s.first = 0, false, false
	blocks := 0
	for i := range m.Batch.Events {
		blocks += len(m.Batch.Events[i].Hashes)
	}
	st := &s.stats
	st.messages.Add(1)
	st.events.Add(uint64(len(m.Batch.Events)))
	st.blockEvents.Add(uint64(blocks))
	st.missed.Add(m.Missed)
	s.cfg.Handle(m)
}

// decodeError counts a message that did not decode and logs it, at most once per
// decodeLogEvery with the count of those not logged.
func (s *Subscriber) decodeError(seq uint64, err error) {
	s.stats.decodeErrors.Add(1)
	if now := time.Now(); now.Sub(s.lastDecodeLog) >= decodeLogEvery {
		s.log.Warn().Err(err).Uint64("seq", seq).Uint64("unlogged", s.quietDecode).Msg("kv events: undecodable message")
		s.lastDecodeLog, s.quietDecode = now, 0
		return
	}
	s.quietDecode++
}
