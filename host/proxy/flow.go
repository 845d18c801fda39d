package proxy

import (
	"cmp"
	"context"
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
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
	"github.com/prometheus/client_golang/prometheus"
)

// Flow control (the flowControl section, host/flowcontrol): when the pool is saturated for a
// request, it waits in the router instead of in one server's queue, and is decided again —
// through the normal pipeline, on the state of that moment — when a server has room.
//
// Flow control's two stages are the pipeline's (pipeline.Pipeline.Detect and Order: a plugin the
// pipeline's detector or order slot names, else the built-ins the section configures). A request
// is decided in a round as without flow control, except that the saturation detector judges it:
// a detector that reads the endpoints' state alone (the default) before the pipeline runs, the
// cycle then keeping only the endpoints with room, and when none is left the pool is saturated
// for it without a pipeline run; one that reads the predictions after the pipeline admitted and
// picked, on the trace's candidates. With room it is dispatched as today: the fast path costs one
// lock (is anyone of its band or a higher one queued?) and the detector's call. Saturated, it is
// not dispatched but queued, and its handler waits; the ordering policy gives it its key first,
// once. A newcomer of a band that has requests queued (or a higher band has) queues at once,
// without a pipeline run, so it cannot overtake them.
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

// FlowStages is a Scheduler that serves flow control's stages: *pipeline.Pipeline, and the
// router's *router.Pipelines (its default profile's pipeline's: the router has one queue, whatever
// profile decides a request). With a Scheduler that does not, the flowControl section's built-ins
// serve.
type FlowStages interface {
	// FlowProfile names the scheduling profile whose pipeline's stages they are, for metrics.
	FlowProfile() string
	DetectsBefore(r *sdk.Request) bool
	Detect(ctx context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, pipeline.StageTrace)
	Order(ctx context.Context, c *sdk.Cycle) (sdk.OrderKey, pipeline.StageTrace)
}

// flowGate is the Server's flow control; nil when flowControl.enabled is false.
type flowGate struct {
	s        *Server
	stages   FlowStages
	all      bool   // flowControl.candidates all: the pipeline chooses among every endpoint
	key      string // config.FlowKey*
	header   string // the header of the flow key "header", canonical so that reading it allocates nothing
	roomTTL  time.Duration
	roomMax  int           // the waiting room's capacity: the default band's maxRequests
	tick     time.Duration // the scrape interval: the pump's and the waiting room's retry period
	m        *metrics.FlowControl
	lastWait atomic.Int64 // the last known wait estimate of the detector: finds hopeless requests
	slots    endpointSlots
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
	order  pipeline.StageTrace // the ordering policy's call that gave its key
	done   chan struct{}       // closed when it left the queue
	gone   bool                // its client went away
}

// verdict is the saturation detector's on one decision, as the gate keeps it.
type verdict struct {
	judged    bool // the detector judged this decision (false: flow control did not look)
	saturated bool
	reason    string  // why saturated: the detector's reason, or the router's own
	room, of  int     // endpoints with room, of those judged
	waitMs    float64 // the detector's wait estimate; negative: unknown
	stage     pipeline.StageTrace
}

func (v verdict) String() string {
	state := fmt.Sprintf("room on %d of %d", v.room, v.of)
	if v.saturated {
		state = "saturated (" + v.reason + ")"
	}
	wait := "unknown"
	if v.waitMs >= 0 {
		wait = fmt.Sprintf("%.0fms", v.waitMs)
	}
	return fmt.Sprintf("%s by %s; wait %s", state, v.stage.Type, wait)
}

// saturatedBy is the verdict of a decision the router judged saturated itself: every endpoint is
// at server.maxInflightPerEndpoint, so none reached the detector.
func saturatedBy(reason string) verdict {
	return verdict{judged: true, saturated: true, reason: reason, waitMs: -1, stage: pipeline.StageTrace{Type: "server.maxInflightPerEndpoint"}}
}

// newFlowGate builds the gate of cfg, or nil when flow control is off. m may be nil (nothing
// exported).
func newFlowGate(s *Server, cfg *config.FlowControl, m *metrics.FlowControl) (*flowGate, error) {
	if cfg == nil || !cfg.Enabled {
		return nil, nil
	}
	stages, ok := s.o.Pipeline.(FlowStages)
	if !ok { // a scheduler without stage slots: the section's built-ins
		stages = pipeline.NewFlowBuiltins(*cfg, s.o.Log)
	}
	var err error
	if m == nil {
		if m, err = metrics.NewFlowControl(prometheus.NewRegistry()); err != nil {
			return nil, err
		}
	}
	g := &flowGate{s: s, stages: stages, all: cfg.Candidates == config.CandidatesAll, key: cfg.FlowKey, header: textproto.CanonicalMIMEHeaderKey(cfg.FlowHeader), roomTTL: cfg.NoEndpointsTTL,
		roomMax: cfg.Default.MaxRequests, tick: s.o.Endpoints.Config().Interval, m: m,
		kicks: make(chan struct{}, 1), stop: make(chan struct{}), held: map[string]*held{}}
	if g.tick <= 0 {
		g.tick = endpoints.DefaultInterval
	}
	// The queue's estimate of a dispatch's wait: the detector's last known, 0 before the first
	// (which errs towards feasible).
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

// restrict, for a detector that judges by state alone, asks it about p's cycle before the
// pipeline runs and keeps only the endpoints with room (all of them with flowControl.candidates
// all); false when none has room: the pool is saturated for p, which is then decided without a
// pipeline run.
func (g *flowGate) restrict(p *pending) bool {
	p.detectBefore = g.stages.DetectsBefore(&p.cycle.Request)
	if !p.detectBefore {
		return true
	}
	v := g.judge(p, p.cycle)
	if v.Saturated() {
		return false
	}
	if g.all {
		return true
	}
	p.cycle.Endpoints = pipeline.KeepRoom(p.cycle.Endpoints, v.Room)
	return true
}

// saturated, for a detector that reads the predictions, asks it about p's decision (called by
// the round, for an admitted pick) on the trace's candidates; true when p must wait instead of
// being dispatched.
func (g *flowGate) saturated(p *pending) bool {
	if p.detectBefore {
		return false // judged before the pipeline ran: the pick is among the endpoints with room
	}
	c := *p.cycle
	c.Endpoints = p.trace.Candidates
	return g.judge(p, &c).Saturated()
}

// observe records a flow control stage call in the stage metrics, under the profile whose
// pipeline's stages they are.
func (g *flowGate) observe(st *pipeline.StageTrace) {
	if g.s.o.Stages != nil {
		g.s.o.Stages.ObserveStage(g.stages.FlowProfile(), st)
	}
}

// judge asks the detector about c, records its verdict on p and keeps its wait estimate.
func (g *flowGate) judge(p *pending, c *sdk.Cycle) sdk.SaturationVerdict {
	v, st := g.stages.Detect(p.ctx, c)
	g.observe(&st)
	if len(v.Room) != len(c.Endpoints) { // a slot's answers are checked; this is a built-in's bug
		v = sdk.SaturationVerdict{Room: make([]int, len(c.Endpoints)), WaitMs: -1, Reason: "invalid-verdict"}
	}
	g.slots.note(c, v.Slots)
	room := 0
	for _, r := range v.Room {
		if r > 0 {
			room++
		}
	}
	p.verdict = verdict{judged: true, saturated: room == 0, reason: v.Reason, room: room, of: len(v.Room), waitMs: v.WaitMs, stage: st}
	if p.trace != nil { // judged after the pipeline; before it, runCycle adds the call to the trace
		p.trace.FlowDetector = &p.verdict.stage
	}
	if v.WaitMs >= 0 {
		g.lastWait.Store(int64(v.WaitMs * float64(time.Millisecond)))
	}
	return v
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
		ahead := g.q.Ahead(band)
		g.mu.Unlock()
		if ahead > 0 { // no overtaking: behind the queued requests of its band and higher
			return g.queue(p)
		}
		if !g.s.decider.decide(p) {
			return false
		}
		switch {
		case p.trace == nil && p.full > 0 && routable(p.states) > 0:
			// Every endpoint that serves the model is at server.maxInflightPerEndpoint: saturated.
			p.verdict = saturatedBy(flowpolicy.ReasonEnginesFull)
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
		if !p.verdict.saturated {
			return true
		}
		return g.queue(p)
	}
}

// queue has the ordering policy key p, then queues it and waits for its fate: false when its
// client went away first. The key is asked outside the lock, which a plugin's round trip must not
// hold; requests queued meanwhile only mean p queues behind them.
func (g *flowGate) queue(p *pending) bool {
	c := &sdk.Cycle{Request: requestOf(p.req, p.meta), Now: p.received}
	key, st := g.stages.Order(p.ctx, c)
	g.observe(&st)
	g.mu.Lock()
	h := g.push(p, key, st)
	g.mu.Unlock()
	return h == nil || g.wait(h)
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

// push queues p with key, or answers it when its band has no room (nil then); the caller holds
// mu.
func (g *flowGate) push(p *pending, key sdk.OrderKey, order pipeline.StageTrace) *held {
	if g.closed {
		g.answer(p, http.StatusServiceUnavailable, reasonShuttingDown, "the router is shutting down")
		return nil
	}
	id := p.meta.id
	if g.held[id] != nil { // a client reused an x-request-id: the queue needs unique ids
		g.seq++
		id += "#" + strconv.FormatUint(g.seq, 10)
	}
	it := flowcontrol.Item{ID: id, Band: int(p.meta.priority), Flow: cmp.Or(key.Flow, p.flow), Arrival: p.received, Bytes: p.bytes,
		Rank: key.Rank, HopelessAfter: key.HopelessAfter}
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
	h := &held{p: p, id: id, pushed: g.s.o.Now(), order: order, done: make(chan struct{})}
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
