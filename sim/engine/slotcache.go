package engine

import (
	"maps"
	"slices"
)

// slotCache is the slot family's prefix block cache, llm-d-inference-sim's: at most capacity
// blocks, each either in use (referenced by running requests) or unused; unused blocks form an
// LRU list, oldest at head, and a new block evicts the head when the cache is full. In-use
// blocks are never evicted. Every write can be journalled so that Slot.Speculate can undo it.
type slotCache struct {
	capacity   int32
	entries    []cacheBlock     // grows to capacity; evicted entries are reused in place
	index      map[uint64]int32 // hash → entry
	used       int32            // entries with refs > 0
	head, tail int32            // the unused entries, least recently released first; −1 when none

	journaling bool
	journal    []cacheOp
	saved      cacheScalars

	// The cache-event log (cacheevents.go): store logs the hash it evicts as Removed,
	// Slot.admit the hash it stores as Stored. It is off while journalling.
	cacheLog
}

// cacheBlock is one cached block; prev and next link unused blocks (−1 at the ends).
type cacheBlock struct {
	hash       uint64
	refs       int32
	prev, next int32
}

// cacheOp is one undoable write: an entry's old value, or a hash's old index entry.
type cacheOp struct {
	entry   int32 // ≥ 0: entries[entry] was old; −1: index[hash] was oldIdx (absent if !existed)
	old     cacheBlock
	hash    uint64
	oldIdx  int32
	existed bool
}

type cacheScalars struct {
	entries          int
	used, head, tail int32
	rec              bool
}

func newSlotCache(capacity int) slotCache {
	return slotCache{capacity: int32(capacity), index: make(map[uint64]int32), head: -1, tail: -1}
}

// lookup returns the entry holding hash h, or −1.
func (c *slotCache) lookup(h uint64) int32 {
	if i, ok := c.index[h]; ok {
		return i
	}
	return -1
}

// mod returns entry i for writing, journalling its old value.
func (c *slotCache) mod(i int32) *cacheBlock {
	if c.journaling && int(i) < c.saved.entries {
		c.journal = append(c.journal, cacheOp{entry: i, old: c.entries[i]})
	}
	return &c.entries[i]
}

func (c *slotCache) setIndex(h uint64, i int32, del bool) {
	if c.journaling {
		old, ok := c.index[h]
		c.journal = append(c.journal, cacheOp{entry: -1, hash: h, oldIdx: old, existed: ok})
	}
	if del {
		delete(c.index, h)
	} else {
		c.index[h] = i
	}
}

// acquire adds a reference to entry i, taking it off the unused list if it was there.
func (c *slotCache) acquire(i int32) {
	if c.entries[i].refs == 0 {
		c.unlink(i)
		c.used++
	}
	c.mod(i).refs++
}

// release drops a reference to entry i; the last one appends it to the unused list's tail,
// which makes it the most recently used.
func (c *slotCache) release(i int32) {
	b := c.mod(i)
	b.refs--
	if b.refs > 0 {
		return
	}
	c.used--
	b.prev, b.next = c.tail, -1
	if c.tail >= 0 {
		c.mod(c.tail).next = i
	} else {
		c.head = i
	}
	c.tail = i
}

func (c *slotCache) unlink(i int32) {
	b := c.entries[i]
	if b.prev >= 0 {
		c.mod(b.prev).next = b.next
	} else {
		c.head = b.next
	}
	if b.next >= 0 {
		c.mod(b.next).prev = b.prev
	} else {
		c.tail = b.prev
	}
	e := c.mod(i)
	e.prev, e.next = -1, -1
}

// store adds hash h as a new block in use (one reference). When the cache is full it evicts
// the least recently used unused block; when every block is in use it stores nothing and
// returns −1.
func (c *slotCache) store(h uint64) int32 {
	var i int32
	switch {
	case int32(len(c.entries)) < c.capacity:
		i = int32(len(c.entries))
		c.entries = append(c.entries, cacheBlock{prev: -1, next: -1})
	case c.head >= 0:
		i = c.head
		c.unlink(i)
		c.setIndex(c.entries[i].hash, 0, true)
		c.removed(c.entries[i].hash)
	default:
		return -1
	}
	b := c.mod(i)
	b.hash, b.refs = h, 1
	c.setIndex(h, i, false)
	c.used++
	return i
}

// begin starts journalling; rollback undoes every write since.
func (c *slotCache) begin() {
	c.journaling = true
	c.journal = c.journal[:0]
	c.saved = cacheScalars{entries: len(c.entries), used: c.used, head: c.head, tail: c.tail, rec: c.rec}
	c.rec = false
}

func (c *slotCache) rollback() {
	for k := len(c.journal) - 1; k >= 0; k-- {
		op := &c.journal[k]
		switch {
		case op.entry >= 0:
			c.entries[op.entry] = op.old
		case op.existed:
			c.index[op.hash] = op.oldIdx
		default:
			delete(c.index, op.hash)
		}
	}
	clear(c.entries[c.saved.entries:])
	c.entries = c.entries[:c.saved.entries]
	c.used, c.head, c.tail, c.rec = c.saved.used, c.saved.head, c.saved.tail, c.saved.rec
	c.journal = c.journal[:0]
	c.journaling = false
}

// clone returns an independent copy, not journalling and without a cache-event log.
func (c *slotCache) clone() slotCache {
	return slotCache{capacity: c.capacity, entries: slices.Clone(c.entries), index: maps.Clone(c.index),
		used: c.used, head: c.head, tail: c.tail}
}
