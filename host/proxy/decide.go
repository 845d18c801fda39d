package proxy

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Requests are decided in rounds. A request that arrives while a round is under way waits for the
// next (which, with a pipeline that decides rounds, starts beside it: overlap.go); a round takes
// the waiting requests in arrival order, reads the endpoints' state for each, and runs their
// cycles through the pipeline together, so the pipeline's stages see them in one batch: one round
// trip per stage for the whole round instead of one per request.
//
// Each request must still be decided as if alone, after the ones before it: on a state that counts
// them in flight where they went. So the round then goes through its requests in order and
// dispatches a request's decision only if what the earlier ones of the round did cannot have
// changed it: its pick is not an endpoint one of them was sent to, and on the endpoints they were
// sent to, its pick aside (which a higher match makes only better), its prefix match did not rise.
// An endpoint another request went to is then only busier for it — a worse choice it did not make
// — and everything else it saw is as it was. Any other request is decided again in the next
// round, first in line, on the state that counts them all.
// (The round assumes what every stage believes: more requests in flight on an endpoint make it no
// better. A stage that keeps state between calls, such as a round-robin picker, also sees the
// decisions that were taken again.)
//
// A pipeline that decides rounds itself (RoundScheduler, ProfileRounds) is handed the round's
// cycles at once, in arrival order: its picker places them in order, each accounting for the
// earlier ones' first choices (pipeline.RunRound), and a member whose trace says its pick
// accounted for them (pipeline.RoundTrace.Accounted) stands even on an endpoint an earlier member
// of its round took — as long as every earlier member of that round went where the picker placed
// it. The prefix-match check still applies, and members that did not account (an old picker, a
// scorer without after-scores, a fallback) are decided again as below.
//
// When picks differ — a weighted-random picker, requests with different prefixes — a round
// dispatches up to one request per endpoint. When they all agree — a max-score picker on one
// state — it dispatches one, as deciding one at a time would, and the next round is smaller: a
// round decides at most twice as many requests as the previous one dispatched (at least two), and
// never more than server.decisionConcurrency or, unset, twice the candidate endpoints or
// roundCap, whichever is more. A fresh start takes twice the candidate endpoints; rounds whose
// picks all account for each other dispatch whole, so they grow to the cap.
//
// With flow control (flow.go), a round asks the saturation detector about each admitted pick
// before dispatching it: a request for which the pool is saturated is not dispatched and leaves
// the round to wait in the flow control queue, whose head comes back as a retry, first in line.

// pending is a request waiting for its decision.
type pending struct {
	ctx      context.Context // the client's: a request whose client left is not decided
	req      *openai.Request
	prompt   *promptKeys // the prompt's prefix blocks
	meta     meta
	received time.Time
	scope    scope // the endpoints the request may go to
	queued   time.Time
	// retry marks a request flow control has decided again (flow.go: the queue's head, or one
	// back from the waiting room): its cycle reads the state at its decision, not at its arrival.
	retry bool
	// flow and bytes are its flow control key and body size (flow.go).
	flow  string
	bytes int64
	state atomic.Int32 // waiting, then taken (decided) or gone (its client left first)
	done  chan struct{}

	// Set by the round that decides it, before done closes.
	cycle  *sdk.Cycle
	states []endpoints.State
	full   int // endpoints left out of the cycle at server.maxInflightPerEndpoint
	// unknown: no endpoint in the rotation listed the model, so the cycle holds them all.
	unknown bool
	trace   *pipeline.Trace // nil when the cycle had no endpoint
	first   *attempt        // the dispatch to the trace's first endpoint; nil when none
	// With flow control, the saturation detector's verdict on the decision; when saturated, the
	// request was not dispatched (first is nil) and waits in the queue. detectBefore: the
	// detector judged before the pipeline ran (flow.go).
	verdict      verdict
	detectBefore bool
	// Set by flow control (flow.go): shed is its own answer to the request (dropped its reason
	// label), waited how long the request waited in the queue.
	shed    *openai.Error
	dropped string
	waited  time.Duration
}

const (
	pendingWaiting int32 = iota
	pendingTaken
	pendingGone
)

// pick is the endpoint the request's decision sends it to first, if any.
func (p *pending) pick() (sdk.Endpoint, bool) {
	if p.trace == nil || !p.trace.Admitted || len(p.trace.Order) == 0 {
		return sdk.Endpoint{}, false
	}
	return p.trace.Candidates[p.trace.Order[0]], true
}

// decider runs the rounds: one at a time, on a goroutine that lives while requests wait.
type decider struct {
	s     *Server
	limit int // server.decisionConcurrency; 0: twice the candidate endpoints
	mu    sync.Mutex
	queue []*pending
	busy  bool // a goroutine runs rounds
	size  int  // the next round's size, from the last round's dispatches (0: a fresh start)
	// wake tells the goroutine that runs rounds that a request arrived (overlap.go).
	wake chan struct{}
	// ledger orders reading a round's cycles against dispatching another's: a round reads all
	// its endpoints' states before an earlier round's dispatches or after all of them.
	ledger sync.Mutex
}

// decide queues p and waits for its decision; false when p's client went away before it.
func (d *decider) decide(p *pending) bool { return d.submit(p, false) }

// retry is decide for the head of the flow control queue: it goes first in line, before the
// requests that arrived while it waited.
func (d *decider) retry(p *pending) bool { return d.submit(p, true) }

func (d *decider) submit(p *pending, first bool) bool {
	p.done = make(chan struct{})
	p.queued = d.s.o.Now()
	p.state.Store(pendingWaiting)
	d.mu.Lock()
	if first {
		d.queue = append([]*pending{p}, d.queue...)
	} else {
		d.queue = append(d.queue, p)
	}
	start := !d.busy
	d.busy = true
	d.mu.Unlock()
	if start {
		go d.run()
	} else {
		d.signal()
	}
	select {
	case <-p.done:
		return true
	case <-p.ctx.Done():
		if p.state.CompareAndSwap(pendingWaiting, pendingGone) {
			return false
		}
		<-p.done // already decided and dispatched: the proxy finds the client gone
		return true
	}
}

// roundSize is how many waiting requests the next round may take; the caller holds mu.
func (d *decider) roundSize() int {
	n := d.s.o.Endpoints.Len()
	fresh, limit := max(2*n, 1), RoundLimit(d.limit, n)
	if d.size > 0 {
		return min(d.size, limit)
	}
	return min(fresh, limit)
}

// RoundLimit is the most requests a decision round takes, which its rounds grow to under a
// backlog while their picks all account for each other: server.decisionConcurrency when set
// (concurrency > 0), else twice the endpoints or roundCap, whichever is more.
func RoundLimit(concurrency, endpoints int) int {
	if concurrency > 0 {
		return concurrency
	}
	return max(2*endpoints, 1, roundCap)
}

// roundCap is how many requests a round may grow to with server.decisionConcurrency unset:
// pipeline.maxBatch's default, the most one pass of the pipeline takes (a larger round is
// decided in several passes on one state, whose picks cannot account for each other's).
const roundCap = 16

// RoundScheduler is a Scheduler that decides several cycles together as one round, after an
// earlier round's placements (prior, nil for none) that its cycles do not count
// (pipeline.Pipeline.RunRoundAfter): ctxs[i] is cycle i's context, and the traces come back in
// order.
type RoundScheduler interface {
	RunRoundAfter(ctxs []context.Context, cycles []*sdk.Cycle, prior pipeline.Prior) []*pipeline.Trace
}

// ProfileRounds is RoundScheduler for Profiles: cycle i is decided by profiles[i]'s pipeline,
// each pipeline's cycles as one round (router.Pipelines.RunProfileRoundAfter).
type ProfileRounds interface {
	RunProfileRoundAfter(ctxs []context.Context, profiles []string, cycles []*sdk.Cycle, prior pipeline.Prior) []*pipeline.Trace
}

// round decides the requests of r together and dispatches those whose decisions stand; it
// returns the others, in order, and how many requests it sent to an endpoint. Its stages may run
// beside the round before it (overlap.go): it dispatches after that one.
func (d *decider) round(r *roundRun, round []*pending) (redo []*pending, dispatched int) {
	began := d.s.o.Now()
	d.ledger.Lock()
	for _, p := range round {
		at := p.received
		if p.retry {
			at = began
		}
		p.cycle, p.states, p.full, p.unknown = d.s.cycle(p.req, p.prompt, p.meta, at, p.scope)
		p.trace, p.verdict = nil, verdict{}
	}
	r.fold = r.prev != nil && !closed(r.prev.settled)
	d.ledger.Unlock()
	var run []*pending // the requests with a cycle to decide, in order
	for _, p := range round {
		if len(p.cycle.Endpoints) == 0 {
			continue // nothing to decide: serve explains why
		}
		if d.s.flow != nil && !d.s.flow.restrict(p) {
			continue // no endpoint has room: it waits in the flow control queue
		}
		run = append(run, p)
	}
	d.runCycles(run, r.prior())
	r.waitPrev()

	d.ledger.Lock()
	defer d.ledger.Unlock()
	defer r.settle()
	taken := r.before()         // where this round, and the one before it, sent requests, in order
	broken := map[uint64]bool{} // picker rounds of which a member did not go where it was placed
	for _, p := range round {
		sent, again := d.settle(p, taken, broken, began)
		if again {
			redo = append(redo, p)
		}
		if sent {
			ep, _ := p.pick()
			taken = append(taken, placement{id: ep.ID, round: p.roundTrace()})
			r.placed[ep.ID]++
			dispatched++
		}
		if rt := p.roundTrace(); rt != nil && (!sent || p.trace.Picker == nil || p.trace.Picker.Fallback != "") {
			broken[rt.ID] = true // the later members of its round counted a placement that is not there
		}
	}
	if d.s.o.Metrics != nil && len(redo) > 0 {
		d.s.o.Metrics.DecisionsRedone(len(redo))
	}
	return redo, dispatched
}

// settle dispatches p if its decision stands after the requests sent to taken (sent), or returns
// it to be decided again (again); a request whose client left, that had no pick, or that flow
// control holds back is neither.
func (d *decider) settle(p *pending, taken []placement, broken map[uint64]bool, began time.Time) (sent, again bool) {
	if !d.stands(p, taken, broken) || d.filled(p) {
		return false, true
	}
	if !p.state.CompareAndSwap(pendingWaiting, pendingTaken) {
		return false, false // its client left: not dispatched
	}
	defer close(p.done)
	if d.s.o.Metrics != nil {
		d.s.o.Metrics.ObserveDecisionWait(began.Sub(p.queued))
	}
	ep, ok := p.pick()
	if !ok {
		return false, false
	}
	if d.s.flow != nil && d.s.flow.saturated(p) {
		return false, false // not dispatched: it waits in the flow control queue
	}
	p.first = d.s.dispatch(&p.cycle.Request, ep, p.prompt)
	return true, false
}

// filled reports whether p's pick has reached server.maxInflightPerEndpoint since p's cycle was
// read (by the requests of its round, or of the round before it): p must be decided again, on a
// cycle that leaves it out.
func (d *decider) filled(p *pending) bool {
	ep, ok := p.pick()
	limit := d.s.o.MaxInflightPerEndpoint
	return ok && limit > 0 && d.s.inflight.Requests(ep.ID) >= limit
}

// runCycles decides the requests' cycles: as one round when the scheduler decides rounds, else
// each on its own goroutine (the last on this one), so that the pipeline's cohorts still gather
// them into one batch per stage.
func (d *decider) runCycles(run []*pending, prior pipeline.Prior) {
	ctxs, cycles := make([]context.Context, len(run)), make([]*sdk.Cycle, len(run))
	for i, p := range run {
		ctxs[i], cycles[i] = p.ctx, p.cycle
	}
	var traces []*pipeline.Trace
	_, profiles := d.s.o.Pipeline.(Profiles)
	switch r := d.s.o.Pipeline.(type) {
	case ProfileRounds:
		names := make([]string, len(run))
		for i, p := range run {
			names[i] = p.meta.profile
		}
		traces = r.RunProfileRoundAfter(ctxs, names, cycles, prior)
	case RoundScheduler:
		if !profiles {
			traces = r.RunRoundAfter(ctxs, cycles, prior)
		}
	}
	if traces == nil && len(run) > 0 {
		var wg sync.WaitGroup
		for _, p := range run[:len(run)-1] {
			wg.Add(1)
			go func() { defer wg.Done(); d.runCycle(p) }()
		}
		d.runCycle(run[len(run)-1])
		wg.Wait()
		return
	}
	for i, p := range run {
		p.trace = traces[i]
		d.record(p)
	}
}

// runCycle runs p's cycle through the pipeline and records its stage calls (the decisions taken
// again included).
func (d *decider) runCycle(p *pending) {
	if prof, ok := d.s.o.Pipeline.(Profiles); ok {
		p.trace = prof.RunProfile(p.ctx, p.meta.profile, p.cycle)
	} else {
		p.trace = d.s.o.Pipeline.Run(p.ctx, p.cycle)
	}
	d.record(p)
}

// record records p's decision: its stage calls (the decisions taken again included), and what the
// round knows beside the pipeline.
func (d *decider) record(p *pending) {
	if d.s.o.Stages != nil {
		d.s.o.Stages.Observe(p.trace)
	}
	if p.trace != nil {
		p.trace.UnknownModel, p.trace.Hop = p.unknown, p.cycle.Request.Disaggregation.Hop
		if p.prompt != nil && len(p.prompt.fromEvents) > 0 {
			p.trace.PrefixFromEvents = slices.Clone(p.prompt.fromEvents)
		}
	}
	if p.verdict.judged && p.trace != nil { // flow control's detector judged p before the pipeline ran
		p.trace.FlowDetector = &p.verdict.stage
	}
}

// placement is where a request of the round was sent, and the picker round it was placed in
// (nil: none).
type placement struct {
	id    string
	round *pipeline.RoundTrace
	// prior: the round before sent it, and this round's cycles were read before it did: a pick
	// stands on its endpoint when it accounted for it (RoundTrace.Prior).
	prior bool
}

// roundTrace is the picker round p's decision was placed in; nil when none.
func (p *pending) roundTrace() *pipeline.RoundTrace {
	if p.trace == nil {
		return nil
	}
	return p.trace.Round
}

// stands reports whether p's decision is the one it would have had after the requests sent to
// taken: its pick is none of them — or, when its pick accounted for the earlier members of its
// picker round and all of them went where they were placed (not broken), none of them outside
// that round — and its prefix match on each but its pick is what its cycle saw.
func (d *decider) stands(p *pending, taken []placement, broken map[uint64]bool) bool {
	if len(taken) == 0 || p.trace == nil {
		return true
	}
	r := p.roundTrace()
	accounted := r != nil && r.Accounted && !broken[r.ID]
	if ep, ok := p.pick(); ok && slices.ContainsFunc(taken, func(t placement) bool {
		if t.id != ep.ID {
			return false
		}
		if t.prior {
			return !(r != nil && r.Accounted && r.Prior > 0)
		}
		return !(accounted && t.round != nil && t.round.ID == r.ID)
	}) {
		return false
	}
	if len(p.cycle.Request.PrefixBlockHashes) == 0 {
		return true
	}
	pick, _ := p.pick()
	for _, e := range p.cycle.Endpoints {
		if e.ID == pick.ID {
			continue // a higher match makes its own pick only better
		}
		if slices.ContainsFunc(taken, func(t placement) bool { return t.id == e.ID }) && d.s.prefixMatchNow(e.ID, p.prompt) > e.State.PrefixMatch {
			return false
		}
	}
	return true
}
