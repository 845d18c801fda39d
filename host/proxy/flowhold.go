package proxy

import (
	"fmt"
	"net/http"
	"time"
)

// A held request's life in flow control's queue (flow.go has the design): its handler waits,
// the pump retries the head, TTLs shed, and a shutdown answers every one still queued.

// wait blocks until h leaves the queue; false when its client went away first.
func (g *flowGate) wait(h *held) bool {
	select {
	case <-h.done:
	case <-h.p.ctx.Done():
		g.mu.Lock()
		if g.deciding != h { // in decision, the pump answers it when the decision ends
			if _, ok := g.q.Remove(h.id); ok {
				h.gone = true
				g.m.Shed(int(h.p.meta.priority), reasonClientGone)
				g.release(h)
			}
		}
		g.mu.Unlock()
		<-h.done
	}
	return !h.gone
}

// release forgets h, out of the queue, notes its wait (and, on its decision's trace, the
// detector's last verdict), and wakes its handler; the caller holds mu.
func (g *flowGate) release(h *held) {
	delete(g.held, h.id)
	p := h.p
	band := int(p.meta.priority)
	g.m.Queued(band, g.q.Len(band), g.q.Bytes(band))
	p.waited = g.s.o.Now().Sub(h.pushed)
	if p.trace != nil {
		p.trace.FlowWait = p.waited
		p.trace.FlowOrder = &h.order
		if p.verdict.judged {
			p.trace.FlowVerdict = p.verdict.String()
		}
	}
	close(h.done)
}

// park holds p in the waiting room until the next scrape interval or its TTL, whichever comes
// first; false when its client went away. A room already holding roomMax requests, or a router
// that is stopping, answers p at once (true, with p.shed).
func (g *flowGate) park(p *pending) bool {
	g.mu.Lock()
	closed, full := g.closed, g.room >= g.roomMax
	if closed || full {
		g.mu.Unlock()
		if closed {
			g.answer(p, http.StatusServiceUnavailable, reasonShuttingDown, "the router is shutting down")
		} else {
			g.answer(p, http.StatusServiceUnavailable, reasonNoEndpoints, fmt.Sprintf(
				"no endpoint is in the rotation and %d requests already wait for one (flowControl.default.maxRequests); retry later", g.roomMax))
		}
		return true
	}
	g.room++
	g.m.WaitingRoom(g.room)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.room--
		g.m.WaitingRoom(g.room)
		g.mu.Unlock()
	}()
	t := time.NewTimer(min(g.tick, max(p.received.Add(g.roomTTL).Sub(g.s.o.Now()), 0)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.stop:
		return true // decided once more: dispatched if an endpoint appeared, else answered shutting-down
	case <-p.ctx.Done():
		g.m.Shed(int(p.meta.priority), reasonClientGone)
		return false
	}
}

// pump serves the queue's head until the queue is empty (see the comment at the top).
func (g *flowGate) pump() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		g.mu.Lock()
		now := g.s.o.Now()
		g.expire(now)
		it, ok := g.q.Peek(now)
		if !ok || g.closed {
			g.pumping = false
			g.shedAll()
			g.mu.Unlock()
			return
		}
		h := g.held[it.ID]
		g.deciding = h
		g.mu.Unlock()
		if g.try(h) {
			continue // the next head, at once
		}
		sleep := g.tick
		g.mu.Lock()
		if at, ok := g.q.NextExpiry(); ok {
			sleep = min(sleep, at.Sub(g.s.o.Now()))
		}
		g.mu.Unlock()
		timer.Reset(max(sleep, 0))
		select {
		case <-g.kicks:
		case <-timer.C:
		case <-g.stop:
		}
	}
}

// expire answers 429 ttl-expired the requests whose band's TTL ran out; the caller holds mu.
func (g *flowGate) expire(now time.Time) {
	g.expired = g.q.Expire(now, g.expired[:0])
	for _, sh := range g.expired {
		h := g.held[sh.Item.ID]
		g.answer(h.p, http.StatusTooManyRequests, sh.Reason.String(), fmt.Sprintf(
			"the request waited in priority band %d of the router's queue until its TTL (flowControl ttl) without a server having room; retry later", sh.Item.Band))
		g.release(h)
	}
}

// try has the head h decided again on fresh state; true when it left the queue (dispatched,
// shed by the admitter, without a pick, or its client gone), false when it stays at the head.
func (g *flowGate) try(h *held) bool {
	p := h.p
	p.retry, p.first = true, nil
	decided := g.s.decider.retry(p)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deciding = nil
	switch {
	case decided && p.first != nil: // dispatched; a client gone meanwhile is the proxy's to find
		g.q.Dispatched(h.id)
		g.m.Dispatched(int(p.meta.priority), p.flow, g.s.o.Now().Sub(h.pushed))
		g.release(h)
		return true
	case !decided || p.ctx.Err() != nil:
		g.q.Remove(h.id)
		h.gone = true
		g.m.Shed(int(p.meta.priority), reasonClientGone)
		g.release(h)
		return true
	case p.trace != nil && !p.verdict.saturated: // the admitter shed it, or nothing was picked: answered as today
		g.q.Remove(h.id)
		g.release(h)
		return true
	}
	return false // saturated, or no candidate: it waits for a kick
}

// close stops the pump and answers every queued request 503 shutting-down.
func (g *flowGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	close(g.stop)
	g.shedAll()
}

// shedAll answers every queued request 503 shutting-down but the head in decision, which the
// pump answers when its decision ends; the caller holds mu.
func (g *flowGate) shedAll() {
	for _, h := range g.held {
		if h == g.deciding {
			continue
		}
		g.q.Remove(h.id)
		g.answer(h.p, http.StatusServiceUnavailable, reasonShuttingDown, "the router shut down while the request waited in its queue")
		g.release(h)
	}
}
