package kvevents

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// DefaultReplayBuffer is how many batches a Publisher keeps for replay when NewPublisher is given
// none: vLLM's default (KVEventsConfig.buffer_steps).
const DefaultReplayBuffer = 10000

// sendQueue is how many messages a Publisher queues for one subscriber before it drops the
// subscriber's next ones, as libzmq's PUB does at its high-water mark (vLLM sets 100,000; a
// subscriber that far behind has lost the thread anyway).
const sendQueue = 10000

// ErrPublisherClosed is Publish's error after Close.
var ErrPublisherClosed = errors.New("kvevents: publisher closed")

// Publisher publishes batches as vLLM's ZmqEventPublisher does, for an engine emulator: a PUB
// socket bound at an address sends each batch to the subscribers whose subscription prefixes
// match the topic, as [topic, 8-byte big-endian sequence, payload], the sequence counting from 0;
// an optional ROUTER socket answers a replay request ["", 8-byte start] from a DEALER with
// ["", seq, payload] for each batch it still holds with seq ≥ start, then ["", -1 as 8 bytes,
// ""]. Like any PUB it sends nothing to a subscriber before the subscription arrives (ZeroMQ's
// slow joiner) and drops a subscriber's messages while sendQueue of them wait unsent.
//
// It is safe for concurrent use.
type Publisher struct {
	topic            []byte
	buffer           int
	pub, rep         net.Listener
	addr, replayAddr string

	mu     sync.Mutex
	seq    uint64      // the next batch's
	enc    []byte      // Publish's encoding buffer
	ring   []published // the last buffer batches published; once full the oldest is at head
	head   int
	subs   map[*subscription]struct{}
	conns  map[net.Conn]struct{} // every accepted connection, for Close
	closed bool
	lose   int // the next lose batches are numbered and kept for replay but not sent (tests)
	wg     sync.WaitGroup
}

// published is a batch kept for replay.
type published struct {
	seq     uint64
	payload []byte
}

// subscription is one subscriber's connection to the PUB socket.
type subscription struct {
	w      *wire
	q      chan []byte    // messages to send, in wire form
	topics map[string]int // subscribed prefixes (counted, as ZeroMQ does); the reader's only
	match  atomic.Bool    // whether one of topics prefixes the Publisher's topic
}

// NewPublisher binds a PUB socket at listen (tcp://host:port, "tcp://127.0.0.1:0" picking a free
// port, or ipc://path) and, when replay is not "", a ROUTER socket there serving the last buffer
// batches (DefaultReplayBuffer when buffer ≤ 0). Every message it publishes has the given topic.
func NewPublisher(listen, replay string, topic string, buffer int) (*Publisher, error) {
	ep, err := parseEndpoint(listen, true)
	if err != nil {
		return nil, err
	}
	p := &Publisher{
		topic: []byte(topic), buffer: buffer,
		subs: map[*subscription]struct{}{}, conns: map[net.Conn]struct{}{},
	}
	if p.buffer <= 0 {
		p.buffer = DefaultReplayBuffer
	}
	if p.pub, err = net.Listen(ep.network, ep.addr); err != nil {
		return nil, err
	}
	p.addr = address(p.pub)
	if replay != "" {
		rep, err := parseEndpoint(replay, true)
		if err == nil {
			p.rep, err = net.Listen(rep.network, rep.addr)
		}
		if err != nil {
			p.pub.Close()
			return nil, err
		}
		p.replayAddr = address(p.rep)
	}
	p.wg.Add(1)
	go p.accept(p.pub, zmq4.Pub, p.servePub)
	if p.rep != nil {
		p.wg.Add(1)
		go p.accept(p.rep, zmq4.Router, p.serveReplay)
	}
	return p, nil
}

// address is the ZeroMQ address of a bound listener, with the port it got.
func address(ln net.Listener) string {
	if ln.Addr().Network() == "unix" {
		return "ipc://" + ln.Addr().String()
	}
	return "tcp://" + ln.Addr().String()
}

// Addr returns the bound PUB address with its real port, e.g. "tcp://127.0.0.1:41234".
func (p *Publisher) Addr() string { return p.addr }

// ReplayAddr returns the bound ROUTER address, or "" without replay.
func (p *Publisher) ReplayAddr() string { return p.replayAddr }

// Publish numbers b (setting b.Seq to the next sequence number), encodes it with AppendBatch,
// keeps it for replay and queues it for every matching subscriber. It returns ErrPublisherClosed
// after Close, and otherwise nil: like a PUB socket it does not know whether anyone received it.
func (p *Publisher) Publish(b *Batch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrPublisherClosed
	}
	b.Seq = p.seq
	p.seq++
	// The message is allocated once at its size; the replay ring keeps its payload frame.
	p.enc = AppendBatch(p.enc[:0], b)
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], b.Seq)
	msg := appendMsg(make([]byte, 0, len(p.topic)+len(p.enc)+32), p.topic, seq[:], p.enc)
	if p.rep != nil {
		p.keep(published{b.Seq, msg[len(msg)-len(p.enc):]})
	}
	if p.lose > 0 {
		p.lose--
		return nil
	}
	for s := range p.subs {
		if s.match.Load() {
			select {
			case s.q <- msg:
			default: // the subscriber is sendQueue messages behind: dropped
			}
		}
	}
	return nil
}

// keep adds a batch to the replay ring, over the oldest when full. p.mu is held.
func (p *Publisher) keep(e published) {
	if len(p.ring) < p.buffer {
		p.ring = append(p.ring, e)
		return
	}
	p.ring[p.head] = e
	p.head = (p.head + 1) % len(p.ring)
}

// since returns the kept batches with seq ≥ start, oldest first.
func (p *Publisher) since(start uint64) []published {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []published
	for i := range p.ring {
		if e := p.ring[(p.head+i)%len(p.ring)]; e.seq >= start {
			out = append(out, e)
		}
	}
	return out
}

// Close stops listening, drops every connection and waits for the Publisher's goroutines to end.
// Publish fails from then on.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	err := p.pub.Close()
	if p.rep != nil {
		if e := p.rep.Close(); err == nil {
			err = e
		}
	}
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
	return err
}

// accept accepts connections on ln until it is closed, serving each, after the handshake as a
// socket of type typ, in a goroutine of its own.
func (p *Publisher) accept(ln net.Listener, typ zmq4.SocketType, serve func(*wire)) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // e.g. out of file descriptors: wait for some to close
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			defer func() {
				p.mu.Lock()
				delete(p.conns, c)
				p.mu.Unlock()
				c.Close()
			}()
			if w, err := handshake(c, typ, true, time.Now().Add(handshakeTimeout)); err == nil {
				serve(w)
			}
		}()
	}
}

// servePub serves one subscriber: it reads its subscriptions (messages starting with 1, or 0 to
// cancel, followed by the prefix) while another goroutine writes what Publish queues. It returns
// when the connection fails or is closed, after the writer has stopped.
func (p *Publisher) servePub(w *wire) {
	s := &subscription{w: w, q: make(chan []byte, sendQueue), topics: map[string]int{}}
	done := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for {
			select {
			case msg := <-s.q:
				if err := w.write(msg); err != nil {
					w.close()
					return
				}
			case <-done:
				return
			}
		}
	})
	p.mu.Lock()
	p.subs[s] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.subs, s)
		p.mu.Unlock()
		close(done)
		w.close()
		writer.Wait()
	}()
	for {
		frames, err := w.readMsg()
		if err != nil {
			return
		}
		if len(frames) != 1 || len(frames[0]) == 0 {
			continue // a SUB sends nothing else; ignored, as libzmq does
		}
		prefix := string(frames[0][1:])
		switch frames[0][0] {
		case 1:
			s.topics[prefix]++
		case 0:
			if s.topics[prefix]--; s.topics[prefix] <= 0 {
				delete(s.topics, prefix)
			}
		}
		match := false
		for t := range s.topics {
			match = match || len(t) <= len(p.topic) && string(p.topic[:len(t)]) == t
		}
		s.match.Store(match)
	}
}

// serveReplay serves one replay client: for each request ["", start] (start big-endian, 8 bytes
// from vLLM's clients; 1 to 8 are accepted) it sends the kept batches from start and the end
// marker. Other messages are ignored, as vLLM does after logging them.
func (p *Publisher) serveReplay(w *wire) {
	var buf []byte
	for {
		frames, err := w.readMsg()
		if err != nil {
			return
		}
		if len(frames) != 2 || len(frames[1]) == 0 || len(frames[1]) > 8 {
			continue
		}
		var start uint64
		for _, x := range frames[1] {
			start = start<<8 | uint64(x)
		}
		buf = buf[:0]
		for _, e := range p.since(start) {
			buf = appendMsg(buf, nil, seqFrame(e.seq), e.payload)
			if len(buf) >= 256<<10 {
				if w.write(buf) != nil {
					return
				}
				buf = buf[:0]
			}
		}
		buf = appendMsg(buf, nil, seqFrame(endSeq), nil)
		if w.write(buf) != nil {
			return
		}
	}
}
