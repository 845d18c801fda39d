package stateplane

import (
	"time"

	"github.com/foresight-router/foresight/host/inflight"
)

// maxMessage bounds a message's size before it is published: NATS refuses a payload above the
// server's max_payload, 1 MB by default.
const maxMessage = 512 << 10

// dispatched records this replica's dispatch of r to endpoint with its prompt's blocks, and
// returns the dispatch's key.
func (p *Plane) dispatched(endpoint string, r *inflight.Request, blocks []uint64, f *inflight.Flight) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.key++
	p.own[p.key] = &ownFlight{endpoint: endpoint, output: r.OutputTokens, tpotSLO: r.TPOTSLOMs, flight: f}
	p.pending = appendDispatch(p.pending, &flightFields{key: p.key, endpoint: endpoint, prefill: r.PrefillTokens,
		output: r.OutputTokens, tpotSLOMs: r.TPOTSLOMs}, blocks)
	p.added()
	return p.key
}

// firstToken records dispatch key's first token, once.
func (p *Plane) firstToken(key uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o := p.own[key]; o != nil && !o.decoding {
		o.decoding = true
		p.pending = appendFirst(p.pending, key)
		p.added()
	}
}

func (p *Plane) prefill(key uint64, tokens int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o := p.own[key]; o != nil && !o.decoding {
		p.pending = appendPrefill(p.pending, key, tokens)
		p.added()
	}
}

// finished records dispatch key's end, once.
func (p *Plane) finished(key uint64, answer []uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.own[key] == nil {
		return
	}
	delete(p.own, key)
	p.pending = appendFinish(p.pending, key, answer)
	p.added()
}

// added notes an event appended to pending; the caller holds mu. Live, the first event of a
// batch arms its flush, and a batch that grew large goes at once.
func (p *Plane) added() {
	p.events++
	if p.cfg.Manual || p.link == nil {
		return
	}
	if p.events == 1 {
		p.firstAt = p.cfg.Now()
	}
	switch {
	case len(p.pending) >= maxMessage || p.cfg.PublishInterval == 0:
		p.flushLocked(p.cfg.Now())
	case p.events == 1:
		if p.timer == nil {
			p.timer = time.AfterFunc(p.cfg.PublishInterval, p.flushTimer)
		} else {
			p.timer.Reset(p.cfg.PublishInterval)
		}
	}
}

func (p *Plane) flushTimer() { p.Flush(p.cfg.Now()) }

// Flush publishes the pending events as one message sent at now (the simulator's virtual time;
// live, the time of the message's first event, so that a peer measures an event's whole
// propagation, its wait for the batch included). Nothing pending publishes nothing.
func (p *Plane) Flush(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked(now)
}

func (p *Plane) flushLocked(now time.Time) {
	if p.events == 0 || p.link == nil {
		return
	}
	if !p.firstAt.IsZero() {
		now = p.firstAt
	}
	msg := p.message(now, p.pending)
	p.send(msg, uint64(p.events))
	p.pending, p.events, p.firstAt = p.pending[:0], 0, time.Time{}
}

// message returns a message of the next sequence number, sent at now, carrying body.
func (p *Plane) message(now time.Time, body []byte) []byte {
	p.seq++
	msg := appendHeader(make([]byte, 0, 64+len(body)), header{replica: p.cfg.Replica, incarnation: p.incarnation,
		seq: p.seq, sentAt: now.UnixNano()})
	return append(msg, body...)
}

// send publishes msg; the caller holds mu.
func (p *Plane) send(msg []byte, events uint64) {
	if err := p.link.publish(p.subject, msg); err != nil {
		p.stats.PublishFailures++
		return
	}
	p.stats.Published++
	p.stats.PublishedEvents += events
}

// Snapshot publishes this replica's requests in flight as a snapshot, after any pending events
// (a message of its own, in parts of at most maxMessage).
func (p *Plane) Snapshot(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.link == nil {
		return
	}
	p.flushLocked(now)
	p.epoch++
	body := appendSnapshotHead(nil, p.epoch, false)
	head := len(body)
	for key, o := range p.own {
		prefill, decoding, generated := o.flight.Progress()
		body = appendEntry(body, &entry{flightFields: flightFields{key: key, endpoint: o.endpoint, prefill: prefill,
			output: o.output, tpotSLOMs: o.tpotSLO}, decoding: decoding, generated: generated})
		if len(body) >= maxMessage {
			p.send(p.message(now, body), 0)
			body = appendSnapshotHead(body[:0], p.epoch, false)
		}
	}
	body[head-1] = 1 // the last part
	p.send(p.message(now, body), 0)
	p.stats.SnapshotsPublished++
}
