package engine

import (
	"math/bits"
	"sync/atomic"
)

// nilBlock marks "no block" in free-queue links, duplicate chains and empty table slots.
const nilBlock int32 = -1

// block is one KV cache block, as vLLM V1's KVCacheBlock: a reference count (requests using
// it), its hash once it is full and registered for prefix caching, and its place in the free
// queue while nobody references it.
type block struct {
	hash   uint64
	prev   int32 // free-queue neighbours
	next   int32
	ref    int32 // requests holding the block
	dup    int32 // next block registered under the same hash (vLLM never de-duplicates)
	hashed bool  // registered in the hash table, so a prefix lookup can hit it
	free   bool  // in the free queue (ref == 0), evictable if hashed
	pend   bool  // registration deferred during Speculate (see kvCache.deferred)
}

// slot is one entry of the open-addressing hash table from block hash to the first block
// registered under it; val == nilBlock marks an empty slot.
type slot struct {
	key uint64
	val int32
}

// kvCache is vLLM V1's block pool: numBlocks blocks, block 0 reserved as the null block (never
// allocated, as vLLM does), a free queue in eviction order, and a map from block hash to cached
// block. Free and cached-but-unreferenced blocks share the free queue: allocation pops the head
// and evicts its hash if it had one, freeing appends at the tail, and a prefix hit on a queued
// block takes it out of the queue ("touch"). That makes eviction least-recently-used.
//
// Blocks and table live in copy-on-write pages so that an engine clones in O(pages).
type kvCache struct {
	owner     atomic.Uint64
	blocks    cowArray[block]
	table     cowArray[slot]
	tableBits uint
	numBlocks int32
	head      int32
	tail      int32
	numFree   int32

	// Undo journal, on during Batch.Speculate: every write to a block or table slot first
	// records the old value, so rollback can put them back in reverse order.
	journal  bool
	blockLog []blockUndo
	slotLog  []slotUndo
	saved    struct {
		head, tail, numFree int32
		rec                 bool
	}
	// During Speculate, registrations are deferred until something could observe them: a
	// lookup, or the allocation (eviction) of a block whose registration is pending. flush then
	// applies them in order. Between a deferral and its flush only free-queue operations and
	// unregistrations of other blocks happen, which commute with it (a block's own hash entry is
	// touched only by its own register and unregister), so every lookup sees the same hash→block
	// map as with eager registration. Registrations after the speculation's last lookup are
	// never applied, which is the point.
	deferred []pendingReg

	// The cache-event log (cacheevents.go): a hash entering the table logs Stored
	// (Batch.cacheBlocks, which knows the request), its entry leaving it logs Removed. It is off
	// during Speculate, so neither deferred registrations nor anything rollback undoes is logged.
	cacheLog
}

type pendingReg struct {
	b int32
	h uint64
}

type blockUndo struct {
	i   int32
	old block
}

type slotUndo struct {
	i   int32
	old slot
}

// begin starts journaling writes so that rollback can undo them.
func (k *kvCache) begin() {
	k.journal = true
	k.blockLog, k.slotLog, k.deferred = k.blockLog[:0], k.slotLog[:0], k.deferred[:0]
	k.saved.head, k.saved.tail, k.saved.numFree = k.head, k.tail, k.numFree
	k.saved.rec, k.rec = k.rec, false
}

// rollback undoes every write since begin and stops journaling. It writes through mut, so a
// page shared with a clone taken meanwhile is copied rather than changed under the clone.
func (k *kvCache) rollback() {
	k.journal = false
	k.deferred = k.deferred[:0]
	owner := k.owner.Load()
	for j := len(k.blockLog) - 1; j >= 0; j-- {
		u := &k.blockLog[j]
		*k.blocks.mut(u.i, owner) = u.old
	}
	for j := len(k.slotLog) - 1; j >= 0; j-- {
		u := &k.slotLog[j]
		*k.table.mut(u.i, owner) = u.old
	}
	k.blockLog, k.slotLog = k.blockLog[:0], k.slotLog[:0]
	k.head, k.tail, k.numFree = k.saved.head, k.saved.tail, k.saved.numFree
	k.rec = k.saved.rec
}

func (k *kvCache) init(numBlocks int) {
	owner := newOwner()
	k.owner.Store(owner)
	k.numBlocks = int32(numBlocks)
	k.blocks = newCowArray(numBlocks, owner, block{prev: nilBlock, next: nilBlock, dup: nilBlock})
	// At most one table entry per block, so a table of at least twice the blocks keeps the load
	// factor at or below one half.
	k.tableBits = uint(bits.Len(uint(2*numBlocks - 1)))
	k.table = newCowArray(1<<k.tableBits, owner, slot{val: nilBlock})
	k.head, k.tail = nilBlock, nilBlock
	for b := int32(1); b < k.numBlocks; b++ {
		k.pushTail(b)
	}
}

// cloneFrom makes k a copy of src sharing all pages. Both get fresh owner ids, so the next write
// on either side to a shared page copies it. Concurrent cloneFrom calls on one src are safe.
func (k *kvCache) cloneFrom(src *kvCache) {
	src.owner.Store(newOwner())
	k.owner.Store(newOwner())
	k.blocks = src.blocks.clone()
	k.table = src.table.clone()
	k.tableBits = src.tableBits
	k.numBlocks = src.numBlocks
	k.head, k.tail, k.numFree = src.head, src.tail, src.numFree
}

// usable is the number of allocatable blocks: all but the null block.
func (k *kvCache) usable() int32 { return k.numBlocks - 1 }

// referenced is the number of blocks held by at least one request.
func (k *kvCache) referenced() int32 { return k.usable() - k.numFree }

func (k *kvCache) get(b int32) block { return k.blocks.get(b) }

func (k *kvCache) mut(b int32) *block {
	if k.journal {
		k.blockLog = append(k.blockLog, blockUndo{b, k.blocks.get(b)})
	}
	return k.blocks.mut(b, k.owner.Load())
}

// mutSlot returns a writable pointer to table slot i.
func (k *kvCache) mutSlot(i int32, owner uint64) *slot {
	if k.journal {
		k.slotLog = append(k.slotLog, slotUndo{i, k.table.get(i)})
	}
	return k.table.mut(i, owner)
}

// pushTail appends b to the free queue (most recently used end).
func (k *kvCache) pushTail(b int32) {
	x := k.mut(b)
	x.prev, x.next, x.free = k.tail, nilBlock, true
	if k.tail == nilBlock {
		k.head = b
	} else {
		k.mut(k.tail).next = b
	}
	k.tail = b
	k.numFree++
}

// unlink takes b out of the free queue.
func (k *kvCache) unlink(b int32) {
	x := k.mut(b)
	prev, next := x.prev, x.next
	x.prev, x.next, x.free = nilBlock, nilBlock, false
	if prev == nilBlock {
		k.head = next
	} else {
		k.mut(prev).next = next
	}
	if next == nilBlock {
		k.tail = prev
	} else {
		k.mut(next).prev = prev
	}
	k.numFree--
}

// allocate pops the least recently used free block, evicts its hash if it had one and hands it
// out with one reference. The caller has checked that a block is free.
func (k *kvCache) allocate() int32 {
	b := k.head
	if k.get(b).pend {
		k.flush()
	}
	k.unlink(b)
	if k.get(b).hashed {
		k.unregister(b)
	}
	k.mut(b).ref = 1
	return b
}

// touch adds a reference to a cached block found by a prefix lookup, taking it out of the free
// queue if nobody held it.
func (k *kvCache) touch(b int32) {
	if k.get(b).free {
		k.unlink(b)
	}
	k.mut(b).ref++
}

// release drops one reference; an unreferenced block joins the tail of the free queue, keeping
// its hash (still a cache hit until it is evicted).
func (k *kvCache) release(b int32) {
	x := k.mut(b)
	x.ref--
	if x.ref == 0 {
		k.pushTail(b)
	}
}

// lookup returns the first block registered under hash h, or nilBlock.
func (k *kvCache) lookup(h uint64) int32 {
	if len(k.deferred) > 0 {
		k.flush()
	}
	mask := int32(1)<<k.tableBits - 1
	for i := k.home(h); ; i = (i + 1) & mask {
		s := k.table.get(i)
		if s.val == nilBlock {
			return nilBlock
		}
		if s.key == h {
			return s.val
		}
	}
}

// register makes full block b findable under hash h. A block already registered under h stays
// first in line (vLLM's get_cached_block returns the oldest); b is appended to its duplicates.
// It reports whether h became findable (no block had it), which a deferred registration never
// does.
func (k *kvCache) register(b int32, h uint64) bool {
	if k.journal {
		k.mut(b).pend = true
		k.deferred = append(k.deferred, pendingReg{b, h})
		return false
	}
	return k.apply(b, h)
}

// flush applies the deferred registrations in order.
func (k *kvCache) flush() {
	for _, p := range k.deferred {
		k.mut(p.b).pend = false
		k.apply(p.b, p.h)
	}
	k.deferred = k.deferred[:0]
}

// apply registers b under h and reports whether h is new to the table.
func (k *kvCache) apply(b int32, h uint64) bool {
	x := k.mut(b)
	x.hash, x.hashed, x.dup = h, true, nilBlock
	owner := k.owner.Load()
	mask := int32(1)<<k.tableBits - 1
	for i := k.home(h); ; i = (i + 1) & mask {
		s := k.table.get(i)
		if s.val == nilBlock {
			*k.mutSlot(i, owner) = slot{key: h, val: b}
			return true
		}
		if s.key == h {
			last := s.val
			for d := k.get(last).dup; d != nilBlock; d = k.get(last).dup {
				last = d
			}
			k.mut(last).dup = b
			return false
		}
	}
}

// unregister evicts b's hash: the next duplicate, if any, takes its place; with none, the hash
// stops being findable, which the cache-event log records.
func (k *kvCache) unregister(b int32) {
	x := k.get(b)
	owner := k.owner.Load()
	mask := int32(1)<<k.tableBits - 1
	i := k.home(x.hash)
	for k.table.get(i).key != x.hash || k.table.get(i).val == nilBlock {
		i = (i + 1) & mask
	}
	if first := k.table.get(i).val; first != b {
		p := first
		for k.get(p).dup != b {
			p = k.get(p).dup
		}
		k.mut(p).dup = x.dup
	} else if x.dup != nilBlock {
		k.mutSlot(i, owner).val = x.dup
	} else {
		k.deleteSlot(i)
		k.removed(x.hash)
	}
	y := k.mut(b)
	y.hashed, y.dup, y.hash = false, nilBlock, 0
}

// deleteSlot empties slot i by backward-shift deletion, so linear probing needs no tombstones.
func (k *kvCache) deleteSlot(i int32) {
	owner := k.owner.Load()
	mask := int32(1)<<k.tableBits - 1
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := k.table.get(j)
		if s.val == nilBlock {
			break
		}
		// s may move back to i only if its home position is not in the cyclic range (i, j].
		h := k.home(s.key)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			*k.mutSlot(i, owner) = s
			i = j
		}
	}
	*k.mutSlot(i, owner) = slot{val: nilBlock}
}

// home is the table position where probing for h starts (Fibonacci hashing, so that small or
// sequential hashes spread too).
func (k *kvCache) home(h uint64) int32 {
	return int32((h * 0x9E3779B97F4A7C15) >> (64 - k.tableBits))
}
