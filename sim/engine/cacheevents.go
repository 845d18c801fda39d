package engine

import (
	"fmt"
	"time"
)

// The cache-event log: what an engine reports so that a router's precise prefix index can follow
// its prefix cache, as vLLM publishes KV-cache events (BlockStored, BlockRemoved,
// AllBlocksCleared). It is off by default and costs one branch per registration, eviction and
// step while off. README.md ("Cache events") says how it matches vLLM.

// CacheEventKind says how the set of block hashes an engine can serve as prefix hits changed.
type CacheEventKind uint8

// The cache event kinds.
const (
	// CacheStored: the hash became findable (vLLM's BlockStored).
	CacheStored CacheEventKind = iota + 1
	// CacheRemoved: the hash stopped being findable (vLLM's BlockRemoved).
	CacheRemoved
	// CacheCleared: every hash stopped being findable (vLLM's AllBlocksCleared). Neither family
	// models a cache reset, so neither logs it; a consumer should still handle it.
	CacheCleared
)

// String returns the kind's name.
func (k CacheEventKind) String() string {
	switch k {
	case CacheStored:
		return "stored"
	case CacheRemoved:
		return "removed"
	case CacheCleared:
		return "cleared"
	}
	return fmt.Sprintf("CacheEventKind(%d)", uint8(k))
}

// CacheEvent is one change to the set of block hashes an engine can serve as prefix hits.
// Applying an engine's events in order to a set (Stored adds Hash, Removed deletes it, Cleared
// empties it) gives, at the end of every Step, exactly the hashes a lookup would find.
type CacheEvent struct {
	Kind CacheEventKind
	// HasParent says whether Parent is set: Stored of a block other than its request's first.
	HasParent bool
	// Hash is the block's hash (Stored, Removed).
	Hash uint64
	// Parent is, for Stored, the hash of the block before it in its request's chain (block
	// Block−1), itself findable when the event happens.
	Parent uint64
	// Request is, for Stored, the request whose block it is (Request.ID).
	Request uint64
	// Block is, for Stored, the block's index j in that request's chain: tokens
	// [j·BlockSize, (j+1)·BlockSize). Generated blocks (batch family) have j ≥ the prompt's full
	// blocks.
	Block int
	// Time is when the change is published: the end of the step that made it (batch family,
	// when vLLM publishes a step's events), the instant Step processed (slot family).
	Time time.Duration
}

// cacheLog is an engine cache's event log; both families' caches embed it. It is on when rec:
// the caches log Removed themselves, and the engines Stored (they know the request). rec is off
// while a cache journals for Speculate, so nothing a speculation does is logged.
type cacheLog struct {
	rec bool
	log []CacheEvent
}

// turnOn turns the log on, unless suspended (inside Speculate).
func (l *cacheLog) turnOn(suspended bool) {
	if !suspended {
		l.rec = true
	}
}

// take appends the events logged since the last call to dst and returns it; nothing while
// suspended.
func (l *cacheLog) take(dst []CacheEvent, suspended bool) []CacheEvent {
	if suspended || len(l.log) == 0 {
		return dst
	}
	dst = append(dst, l.log...)
	l.log = l.log[:0]
	return dst
}

// stored logs that block j of request req, hash h, became findable; parent is block j−1's
// hash (ignored for j = 0).
func (l *cacheLog) stored(req uint64, j int, h, parent uint64) {
	ev := CacheEvent{Kind: CacheStored, Hash: h, Request: req, Block: j}
	if j > 0 {
		ev.Parent, ev.HasParent = parent, true
	}
	l.log = append(l.log, ev)
}

// removed logs that hash h stopped being findable, when the log is on.
func (l *cacheLog) removed(h uint64) {
	if l.rec {
		l.log = append(l.log, CacheEvent{Kind: CacheRemoved, Hash: h})
	}
}

// stamp sets the time of the events logged from mark on (a step's) to t.
func (l *cacheLog) stamp(mark int, t time.Duration) {
	for i := mark; i < len(l.log); i++ {
		l.log[i].Time = t
	}
}

// RecordCacheEvents turns the cache-event log on (it is off by default): from now on, every
// hash that becomes findable in the prefix cache logs a CacheStored event, and every hash that
// stops being findable a CacheRemoved. Hashes already cached are not reported, so call it before
// the first Step. Inside Speculate it does nothing.
func (e *Batch) RecordCacheEvents() { e.kv.turnOn(e.kv.journal) }

// TakeCacheEvents appends the cache events logged since the last call to dst, in order, and
// returns it. Inside Speculate it appends nothing (the log is suspended there, and what f does
// is never logged).
func (e *Batch) TakeCacheEvents(dst []CacheEvent) []CacheEvent { return e.kv.take(dst, e.kv.journal) }

// RecordCacheEvents turns the cache-event log on (it is off by default): from now on, every
// hash the prefix cache stores logs a CacheStored event and every hash it evicts a
// CacheRemoved. Hashes already cached are not reported, so call it before the first Step. Inside
// Speculate it does nothing.
func (e *Slot) RecordCacheEvents() { e.cache.turnOn(e.cache.journaling) }

// TakeCacheEvents appends the cache events logged since the last call to dst, in order, and
// returns it. Inside Speculate it appends nothing.
func (e *Slot) TakeCacheEvents(dst []CacheEvent) []CacheEvent {
	return e.cache.take(dst, e.cache.journaling)
}
