package engine

import "slices"

// Clone returns an independent copy of e: feeding both the same calls gives the same results
// (including the noise), and nothing done to one affects the other. The KV cache is shared
// page by page until either side writes, so a clone costs O(requests + pages), not O(blocks).
// The cache-event log is not copied: the clone's starts empty and off (a what-if copy's cache
// changes are no router's business); RecordCacheEvents on the clone continues from its cache.
func (e *Batch) Clone() *Batch {
	if len(e.kv.deferred) > 0 { // inside Speculate: the clone must see every registration
		e.kv.flush()
	}
	c := &Batch{
		cfg:         e.cfg,
		tokenDelay:  e.tokenDelay,
		noise:       e.noise,
		clock:       e.clock,
		pending:     cloneReqs(e.pending),
		waiting:     cloneReqs(e.waiting),
		running:     cloneReqs(e.running),
		transfers:   cloneReqs(e.transfers),
		stalled:     e.stalled,
		queries:     e.queries,
		hits:        e.hits,
		preemptions: e.preemptions,
	}
	c.kv.cloneFrom(&e.kv)
	return c
}

// Speculate calls f with e and then puts e back exactly as it was: f may Add, Step and read e
// as it likes (an oracle simulating a candidate arrival forward), and afterwards e behaves as if f
// had never run — the same events, metrics and noise stream as an engine that did not speculate.
// f receives e itself (as an Engine).
// It gives the same results as running f on e.Clone(), without copying the KV cache's pages:
// every write to the KV cache is journalled and undone at the end. Events returned by e.Step
// before the call stay valid. f must not call Speculate on e; e must not be used concurrently,
// not even by Clone, while f runs. Clones taken inside f are independent of e, as always.
// The cache-event log is suspended while f runs: nothing f does is logged (neither the deferred
// registrations nor their rollback), and afterwards the log is as before the call.
func (e *Batch) Speculate(f func(e Engine)) {
	if e.spec.active {
		panic("engine: nested Speculate")
	}
	sp := &e.spec
	sp.active = true
	sp.noise, sp.clock, sp.stalled = e.noise, e.clock, e.stalled
	sp.queries, sp.hits, sp.preemptions = e.queries, e.hits, e.preemptions
	sp.pending, sp.waiting, sp.running, sp.transfers = e.pending, e.waiting, e.running, e.transfers
	sp.pBuf = append(sp.pBuf[:0], e.pending...)
	sp.wBuf = append(sp.wBuf[:0], e.waiting...)
	sp.rBuf = append(sp.rBuf[:0], e.running...)
	sp.tBuf = append(sp.tBuf[:0], e.transfers...)
	sp.events = e.events
	e.events = sp.eventBuf[:0]
	e.kv.begin()
	defer func() {
		e.kv.rollback()
		sp.eventBuf = e.events[:0]
		e.events = sp.events
		e.noise, e.clock, e.stalled = sp.noise, sp.clock, sp.stalled
		e.queries, e.hits, e.preemptions = sp.queries, sp.hits, sp.preemptions
		// Block tables are only appended to or dropped, so the saved headers still see exactly
		// their old blocks; the queues' backing arrays may have been rewritten in place.
		e.pending = restoreReqs(sp.pending, sp.pBuf)
		e.waiting = restoreReqs(sp.waiting, sp.wBuf)
		e.running = restoreReqs(sp.running, sp.rBuf)
		e.transfers = restoreReqs(sp.transfers, sp.tBuf)
		clear(sp.pBuf)
		clear(sp.wBuf)
		clear(sp.rBuf)
		clear(sp.tBuf)
		sp.pending, sp.waiting, sp.running, sp.transfers, sp.events = nil, nil, nil, nil, nil
		sp.active = false
	}()
	f(e)
}

// restoreReqs puts the saved contents back into the saved slice header.
func restoreReqs(hdr, saved []reqState) []reqState {
	copy(hdr, saved)
	return hdr
}

// cloneReqs copies requests. Block tables are shared with their capacity clipped: both sides
// only ever append to a table or drop it, so an append on either side cannot be seen by the other.
func cloneReqs(src []reqState) []reqState {
	if len(src) == 0 {
		return nil
	}
	dst := slices.Clone(src)
	for i := range dst {
		dst[i].blocks = slices.Clip(dst[i].blocks)
	}
	return dst
}
