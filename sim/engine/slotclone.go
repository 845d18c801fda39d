package engine

import "slices"

// Clone returns an independent copy of e: feeding both the same calls gives the same results
// (jitter included), and nothing done to one affects the other. The cache-event log is not
// copied: the clone's starts empty and off.
func (e *Slot) Clone() *Slot {
	return &Slot{
		cfg: e.cfg, rng: e.rng, jitter: e.jitter, clock: e.clock,
		queue: slices.Clone(e.queue), running: slices.Clone(e.running), cache: e.cache.clone(),
		abortFreed: e.abortFreed, admitFloor: e.admitFloor, queries: e.queries, hits: e.hits,
	}
}

// Speculate calls f with e and then puts e back exactly as it was: f may Add, Step and read e
// as it likes (an oracle simulating a candidate arrival forward), and afterwards e behaves as if
// f had never run — the same events, metrics and jitter stream. It gives the same results as
// running f on e.Clone() without copying the cache: every cache write is journalled and undone.
// Events returned by e.Step before the call stay valid. f must not call Speculate on e. The
// cache-event log is suspended while f runs: nothing f does is logged, and afterwards the log is
// as before the call.
func (e *Slot) Speculate(f func(e Engine)) {
	if e.spec.active {
		panic("engine: nested Speculate")
	}
	sp := &e.spec
	sp.active = true
	sp.rng, sp.jitter, sp.abortFreed = e.rng, e.jitter, e.abortFreed
	sp.clock, sp.admitFloor, sp.queries, sp.hits = e.clock, e.admitFloor, e.queries, e.hits
	sp.queue, sp.running = e.queue, e.running
	sp.qBuf = append(sp.qBuf[:0], e.queue...)
	sp.rBuf = append(sp.rBuf[:0], e.running...)
	sp.events = e.events
	e.events = sp.eventBuf[:0]
	e.cache.begin()
	defer func() {
		e.cache.rollback()
		sp.eventBuf = e.events[:0]
		e.events = sp.events
		e.rng, e.jitter, e.abortFreed = sp.rng, sp.jitter, sp.abortFreed
		e.clock, e.admitFloor, e.queries, e.hits = sp.clock, sp.admitFloor, sp.queries, sp.hits
		// Requests' block lists are never modified, so restoring the queues' contents into their
		// saved headers restores them exactly, whatever f did to the backing arrays.
		copy(sp.queue, sp.qBuf)
		copy(sp.running, sp.rBuf)
		e.queue, e.running = sp.queue, sp.running
		clear(sp.qBuf)
		clear(sp.rBuf)
		sp.queue, sp.running, sp.events = nil, nil, nil
		sp.active = false
	}()
	f(e)
}
