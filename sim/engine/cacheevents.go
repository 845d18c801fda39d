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

// stampCacheEvents sets the time of the events a step logged.
func stampCacheEvents(evs []CacheEvent, t time.Duration) {
	for i := range evs {
		evs[i].Time = t
	}
}

// RecordCacheEvents turns the cache-event log on (it is off by default): from now on, every
// hash that becomes findable in the prefix cache logs a CacheStored event, and every hash that
// stops being findable a CacheRemoved. Hashes already cached are not reported, so call it before
// the first Step. Inside Speculate it does nothing.
func (e *Batch) RecordCacheEvents() {
	if !e.kv.journal {
		e.kv.rec = true
	}
}

// TakeCacheEvents appends the cache events logged since the last call to dst, in order, and
// returns it. Inside Speculate it appends nothing (the log is suspended there, and what f does
// is never logged).
func (e *Batch) TakeCacheEvents(dst []CacheEvent) []CacheEvent {
	if e.kv.journal || len(e.kv.log) == 0 {
		return dst
	}
	dst = append(dst, e.kv.log...)
	e.kv.log = e.kv.log[:0]
	return dst
}

// logStored logs that r's block j, hash h, became findable.
func (e *Batch) logStored(r *reqState, j int, h uint64) {
	ev := CacheEvent{Kind: CacheStored, Hash: h, Request: r.id, Block: j}
	if j > 0 {
		ev.Parent, ev.HasParent = r.hashAt(j-1, e.cfg.BlockSize), true
	}
	e.kv.log = append(e.kv.log, ev)
}

// RecordCacheEvents turns the cache-event log on (it is off by default): from now on, every
// hash the prefix cache stores logs a CacheStored event and every hash it evicts a
// CacheRemoved. Hashes already cached are not reported, so call it before the first Step. Inside
// Speculate it does nothing.
func (e *Slot) RecordCacheEvents() {
	if !e.cache.journaling {
		e.cache.rec = true
	}
}

// TakeCacheEvents appends the cache events logged since the last call to dst, in order, and
// returns it. Inside Speculate it appends nothing.
func (e *Slot) TakeCacheEvents(dst []CacheEvent) []CacheEvent {
	if e.cache.journaling || len(e.cache.log) == 0 {
		return dst
	}
	dst = append(dst, e.cache.log...)
	e.cache.log = e.cache.log[:0]
	return dst
}

// logStored logs that r's prompt block j, hash h, was stored.
func (e *Slot) logStored(r *slotReq, j int, h uint64) {
	ev := CacheEvent{Kind: CacheStored, Hash: h, Request: r.id, Block: j}
	if j > 0 {
		ev.Parent, ev.HasParent = r.hashAt(j-1, e.cfg.BlockSize), true
	}
	e.cache.log = append(e.cache.log, ev)
}
