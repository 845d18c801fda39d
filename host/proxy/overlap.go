package proxy

import (
	"slices"

	"github.com/foresight-router/foresight/host/pipeline"
)

// Overlapping rounds. With a pipeline that decides rounds (RoundScheduler, ProfileRounds), a
// round does not wait for the one before it to finish: requests that arrive while a round is
// under way start the next one at once, whose stages run beside the first's, two rounds at most.
// The second round's cycles were read before the first dispatched, so they do not count the
// first's requests in flight; just before its picker the pipeline adds them
// (pipeline.RunRoundAfter: each placement moves the endpoint's state, predictions and scores as
// a placement within a round does). It dispatches after the first, and a pick on an endpoint the
// first round took stands only when it accounted for that placement (RoundTrace.Prior); any
// other is decided again, as a collision within a round is. A round reads its cycles either
// before the round before it dispatches anything or after it dispatched everything
// (decider.ledger), so it knows which of the two it must add. Requests the first round gives
// back go first in line for the round after the second.
//
// With a pipeline that decides one cycle at a time, or server.decisionConcurrency 1, rounds run
// one after another.

// RoundsInFlight is how many decision rounds may be under way at once with a pipeline that
// decides rounds: 2, or 1 with server.decisionConcurrency 1 (concurrency), one request after the
// other.
func RoundsInFlight(concurrency int) int {
	if concurrency == 1 {
		return 1
	}
	return 2
}

// roundRun is one round under way.
type roundRun struct {
	prev *roundRun // the round started before it; nil when none was under way
	// fold: its cycles were read before prev dispatched, so prev's placements are added to them.
	fold bool
	// placed counts where it sent requests, by endpoint id; complete when settled closes.
	placed  map[string]int
	settled chan struct{} // closed when it has dispatched (or given back) all its requests
	done    chan struct{} // closed when it has also queued what it gives back
}

func newRoundRun(prev *roundRun) *roundRun {
	return &roundRun{prev: prev, placed: map[string]int{}, settled: make(chan struct{}), done: make(chan struct{})}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// prior is what the pipeline adds to r's cycles before their picker: where the round before r
// sent its requests, once it has; nil when r's cycles already count them.
func (r *roundRun) prior() pipeline.Prior {
	if !r.fold {
		return nil
	}
	prev := r.prev
	return func() map[string]int {
		<-prev.settled
		return prev.placed
	}
}

// waitPrev waits until the round before r has dispatched: r dispatches after it.
func (r *roundRun) waitPrev() {
	if r.prev != nil {
		<-r.prev.settled
	}
}

// before are the endpoints r's picks must stand after, besides its own placements: those the
// round before r sent requests to, when r's cycles were read before it did (stands asks only
// whether an endpoint was taken, so each counts once). The caller holds decider.ledger.
func (r *roundRun) before() []placement {
	if !r.fold {
		return nil
	}
	out := make([]placement, 0, len(r.prev.placed))
	for id := range r.prev.placed {
		out = append(out, placement{id: id, prior: true})
	}
	return out
}

// settle marks r as dispatched; the caller holds decider.ledger.
func (r *roundRun) settle() { close(r.settled) }

// signal wakes the goroutine that runs rounds: a request arrived.
func (d *decider) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// overlaps reports whether rounds may run beside each other: the pipeline decides rounds.
func (d *decider) overlaps() bool {
	switch d.s.o.Pipeline.(type) {
	case ProfileRounds:
		return true
	case RoundScheduler:
		_, profiles := d.s.o.Pipeline.(Profiles)
		return !profiles
	}
	return false
}

// run decides rounds until nobody waits: each on a goroutine of its own, up to RoundsInFlight at
// once when the pipeline decides rounds, else one after another.
func (d *decider) run() {
	limit := 1
	if d.overlaps() {
		limit = RoundsInFlight(d.limit)
	}
	running := make(chan struct{}, limit)
	var last *roundRun
	for {
		running <- struct{}{}
		d.mu.Lock()
		d.queue = slices.DeleteFunc(d.queue, func(p *pending) bool { return p.state.Load() == pendingGone })
		if len(d.queue) == 0 {
			if last != nil && !closed(last.done) { // it may give requests back
				d.mu.Unlock()
				<-running
				select {
				case <-last.done:
				case <-d.wake:
				}
				continue
			}
			d.busy, d.size = false, 0
			d.mu.Unlock()
			return
		}
		n := min(len(d.queue), d.roundSize())
		round := slices.Clone(d.queue[:n])
		d.queue = slices.Delete(d.queue, 0, n)
		d.mu.Unlock()

		r := newRoundRun(last)
		if last != nil && closed(last.done) {
			r.prev = nil
		}
		last = r
		go func() {
			defer func() { <-running }()
			d.finish(r, round)
		}()
	}
}

// finish decides r's round and queues, first in line, the requests it gives back, after the
// round before it did.
func (d *decider) finish(r *roundRun, round []*pending) {
	defer close(r.done)
	redo, dispatched := d.round(r, round)
	if r.prev != nil {
		<-r.prev.done
	}
	d.mu.Lock()
	d.queue = append(redo, d.queue...)
	d.size = max(2*dispatched, 2)
	d.mu.Unlock()
}
