package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/flowcontrol"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/prometheus/client_golang/prometheus"
)

// Flow control (the flowControl section, host/flowcontrol): when the pool is saturated for a
// request, it waits in the router instead of in one server's queue, and is decided again —
// through the normal pipeline, on the state of that moment — when a server has room.
//
// A request is decided in a round as without flow control, except that by default (the detector
// judging endpoints by their state) its cycle keeps only the endpoints with room, and when none
// is left the pool is saturated for it without a pipeline run; for one the pipeline admitted and
// picked, the round then asks the saturation detector about the trace's candidates (they carry
// the producer's predictions: the detector judges by them when configured to, and takes its wait
// estimate from them). With room it is dispatched as today: the fast path costs one lock (is
// anyone of its band or a higher one queued?) and the detector's checks. Saturated, it is not
// dispatched but queued, and its handler waits. A newcomer of a band that has requests queued
// (or a higher band has) queues at once, without a pipeline run, so it cannot overtake them.
//
// One goroutine, the pump, lives while the queue holds requests. It sheds the requests whose TTL
// ran out, then has the head decided again, first in line at the decider: with room, the head is
// dispatched and the next head tried at once; still saturated, it stays at the head and the pump
// sleeps until a kick — a request's flight ends, a scrape interval passes, or the next TTL runs
// out. Only one head is in decision at a time, and a client that leaves meanwhile is answered
// when that decision ends; a client that leaves while its request waits takes it out at once.
//
// A request for which the pool has no endpoint at all (scaled to zero, every endpoint out of the
// rotation) waits in a waiting room of its own rather than in its band, because it differs in
// both bounds: its wait is flowControl.noEndpointsTTL, not the band's TTL, and it must not hold
// its band back (a newcomer queues behind its band, and the pump would retry a head that cannot
// be served while requests for served models wait). Each such request retries at every scrape
// interval until an endpoint appears or its TTL runs out (503 no-endpoints).

// Reason labels of the requests flow control answers itself, besides flowcontrol.Reason's.
const (
	reasonNoEndpoints  = "no-endpoints"
	reasonClientGone   = "client-gone"
	reasonShuttingDown = "shutting-down"
)

// flowGate is the Server's flow control; nil when flowControl.enabled is false.
type flowGate struct {
	s        *Server
	det      *flowcontrol.Detector
	key      string // config.FlowKey*
	header   string // the header of the flow key "header", canonical so that reading it allocates nothing
	roomTTL  time.Duration
	roomMax  int           // the waiting room's capacity: the default band's maxRequests
	tick     time.Duration // the scrape interval: the pump's and the waiting room's retry period
	m        *metrics.FlowControl
	lastWait atomic.Int64 // the last verdict's Wait: slo-feasible's estimate
	kicks    chan struct{}
	stop     chan struct{}

	mu       sync.Mutex
	q        *flowcontrol.Queue
	held     map[string]*held // the queued requests by item id
	deciding *held            // the head in decision: its client's departure waits for it
	pumping  bool
	closed   bool
	room     int // requests in the waiting room
	seq      uint64
	expired  []flowcontrol.Shed
}

// held is a queued request and how its handler learns its fate.
type held struct {
	p      *pending
	id     string // its item id: the request id, made unique when a client reuses one
	pushed time.Time
	done   chan struct{} // closed when it left the queue
	gone   bool          // its client went away
}

// newFlowGate builds the gate of cfg, or nil when flow control is off. m may be nil (nothing
// exported).
func newFlowGate(s *Server, cfg *config.FlowControl, m *metrics.FlowControl) (*flowGate, error) {
	if cfg == nil || !cfg.Enabled {
		return nil, nil
	}
	det, err := flowcontrol.NewDetector(cfg.DetectorConfig())
	if err != nil {
		return nil, fmt.Errorf("flowControl.detector: %w", err)
	}
	if m == nil {
		if m, err = metrics.NewFlowControl(prometheus.NewRegistry()); err != nil {
			return nil, err
		}
	}
	g := &flowGate{s: s, det: det, key: cfg.FlowKey, header: textproto.CanonicalMIMEHeaderKey(cfg.FlowHeader), roomTTL: cfg.NoEndpointsTTL,
		roomMax: cfg.Default.MaxRequests, tick: s.o.Endpoints.Config().Interval, m: m,
		kicks: make(chan struct{}, 1), stop: make(chan struct{}), held: map[string]*held{}}
	if g.tick <= 0 {
		g.tick = endpoints.DefaultInterval
	}
	// slo-feasible's estimate of a dispatch's wait: the last verdict's, 0 when unknown (which
	// errs towards feasible).
	estimate := func(time.Time) time.Duration { return time.Duration(g.lastWait.Load()) }
	if g.q, err = flowcontrol.New(cfg.Queue(estimate)); err != nil {
		return nil, err
	}
	return g, nil
}

// flowKey is the request's flow: the key the configuration names ("" when the request has none).
func (g *flowGate) flowKey(h http.Header, req *openai.Request, m meta) string {
	switch g.key {
	case config.FlowKeyUser:
		return req.User
	case config.FlowKeySession:
		return m.session
	case config.FlowKeyObjective:
		return m.objective
	}
	if v := h[g.header]; len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return ""
}

// restrict keeps p's candidates to the endpoints with room (Detector.Restrict); false when none
// is left: the pool is saturated for p, which is then decided without a pipeline run.
func (g *flowGate) restrict(p *pending) bool {
	if g.det.Restrict(p.cycle) {
		return true
	}
	p.verdict = flowcontrol.Verdict{Saturated: true, Reason: flowcontrol.SaturationEngines}
	return false
}

// saturated asks the detector about p's decision (called by the round, for an admitted pick)
// and records the verdict; true when p must wait instead of being dispatched.
func (g *flowGate) saturated(p *pending) bool {
	p.verdict = g.det.Check(&sdk.Cycle{Request: p.cycle.Request, Endpoints: p.trace.Candidates})
	g.lastWait.Store(int64(p.verdict.Wait))
	return p.verdict.Saturated
}

// kick wakes the pump: a request's flight ended, so a server may have room.
func (g *flowGate) kick() {
	select {
	case g.kicks <- struct{}{}:
	default:
	}
}

// decide is the decider's decide with flow control: false when the client went away first;
// otherwise p holds its decision, dispatched, or p.shed the answer flow control gave it.
func (g *flowGate) decide(p *pending) bool {
	band := int(p.meta.priority)
	for {
		g.mu.Lock()
		if g.q.Ahead(band) > 0 { // no overtaking: behind the queued requests of its band and higher
			h := g.push(p)
			g.mu.Unlock()
			return h == nil || g.wait(h)
		}
		g.mu.Unlock()
		if !g.s.decider.decide(p) {
			return false
		}
		switch {
		case p.trace == nil && p.full > 0 && routable(p.states) > 0:
			// Every endpoint that serves the model is at server.maxInflightPerEndpoint: saturated.
			p.verdict = flowcontrol.Verdict{Saturated: true, Reason: flowcontrol.SaturationEngines}
		case p.trace == nil && routable(p.states) == 0:
			if !g.s.o.Now().Before(p.received.Add(g.roomTTL)) {
				g.answer(p, http.StatusServiceUnavailable, reasonNoEndpoints, fmt.Sprintf(
					"no endpoint was in the rotation for %v (flowControl.noEndpointsTTL); retry later", g.roomTTL))
				return true
			}
			if !g.park(p) {
				return false
			}
			if p.shed != nil { // the room was full, or the router is stopping
				return true
			}
			p.retry = true // decided again: on the state of that moment
			continue
		}
		if !p.verdict.Saturated {
			return true
		}
		g.mu.Lock()
		h := g.push(p)
		g.mu.Unlock()
		return h == nil || g.wait(h)
	}
}

// routable counts the endpoints in the rotation.
func routable(states []endpoints.State) int {
	n := 0
	for _, st := range states {
		if st.Routable() {
			n++
		}
	}
	return n
}

// push queues p, or answers it when its band has no room (nil then); the caller holds mu.
func (g *flowGate) push(p *pending) *held {
	if g.closed {
		g.answer(p, http.StatusServiceUnavailable, reasonShuttingDown, "the router is shutting down")
		return nil
	}
	id := p.meta.id
	if g.held[id] != nil { // a client reused an x-request-id: the queue needs unique ids
		g.seq++
		id += "#" + strconv.FormatUint(g.seq, 10)
	}
	it := flowcontrol.Item{ID: id, Band: int(p.meta.priority), Flow: p.flow, Arrival: p.received, Bytes: p.bytes}
	if p.meta.slo.TTFTMs > 0 {
		it.Deadline = p.received.Add(time.Duration(p.meta.slo.TTFTMs * float64(time.Millisecond)))
	}
	err := g.q.Push(it)
	var refused *flowcontrol.RefusedError
	switch {
	case errors.As(err, &refused):
		g.answer(p, http.StatusTooManyRequests, refused.Reason.String(), refusal(refused))
		return nil
	case err != nil: // the gate builds every item: a bug, not the client's fault
		p.shed = &openai.Error{Status: http.StatusInternalServerError, Type: openai.TypeServer, Message: "queueing the request: " + err.Error()}
		return nil
	}
	h := &held{p: p, id: id, pushed: g.s.o.Now(), done: make(chan struct{})}
	g.held[id] = h
	g.m.Queued(it.Band, g.q.Len(it.Band), g.q.Bytes(it.Band))
	if !g.pumping {
		g.pumping = true
		go g.pump()
	}
	return h
}

// refusal explains a push refused at the queue's door.
func refusal(e *flowcontrol.RefusedError) string {
	switch e.Reason {
	case flowcontrol.ReasonTooLarge:
		return fmt.Sprintf("the request is larger than priority band %d of the router's queue holds (flowControl maxBytes)", e.Band)
	case flowcontrol.ReasonBandBytes:
		return fmt.Sprintf("priority band %d of the router's queue holds its most bytes (flowControl maxBytes); retry later", e.Band)
	}
	return fmt.Sprintf("priority band %d of the router's queue holds its most requests (flowControl maxRequests); retry later", e.Band)
}

// answer sheds p with status and reason: a 429 (rate_limit_exceeded) or a 503 (server_error)
// whose code and reason header name the reason.
func (g *flowGate) answer(p *pending, status int, reason, msg string) {
	typ := openai.TypeRateLimit
	if status >= 500 {
		typ = openai.TypeServer
	}
	p.shed = &openai.Error{Status: status, Type: typ, Code: strings.ReplaceAll(reason, "-", "_"), Message: msg}
	p.dropped = reason
	g.m.Shed(int(p.meta.priority), reason)
}

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
		if p.verdict.Saturated || p.first != nil { // the detector judged this decision
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
	case p.trace != nil && !p.verdict.Saturated: // the admitter shed it, or nothing was picked: answered as today
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
