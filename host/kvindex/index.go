// Package kvindex is the router's precise prefix index: per endpoint, the prompt blocks its
// engine reports cached, kept from the engine's KV-cache events (host/kvevents), so that a
// cycle's prefix match is what the engine holds rather than what the router sent it.
//
// The engine names a block by its own hash, which depends on its hash function and seed
// (vLLM's sha256 over CBOR, seeded by PYTHONHASHSEED) that the router cannot be assumed to
// share. So the index keys blocks by a hash of its own, tokenize.BlockKeys of the block's token
// ids chained from its parent's key: a BlockStored event carries the token ids of its blocks and
// the engine hash of the block before them, whose key the index knows from an earlier event. A
// request's keys come from tokenizing its prompt with the engine's tokenizer (host/tokenize),
// and the two meet without the engine's hash being reproduced. The index keeps a map from the
// engine's hashes to its keys, to apply BlockRemoved, which names blocks by engine hash only.
//
// Each endpoint's record is bounded (SetCapacity): events lost in transit can leave blocks the
// engine has evicted, so beyond the engine's capacity the least recently stored go first.
package kvindex

import (
	"sync/atomic"

	"github.com/foresight-router/foresight/internal/byendpoint"
)

// MaxCapacity bounds an endpoint's record whatever its engine reports: 2^20 blocks (16M tokens
// at 16 per block), as the router's own record (prefix.MaxCapacity).
const MaxCapacity = 1 << 20

// Index maps endpoints to the blocks their engines report cached. It is safe for concurrent
// use: events of one endpoint are applied by one goroutine while cycles read every endpoint.
type Index struct {
	blockSize atomic.Int64 // FleetBlockSize
	eps       *byendpoint.Map[cache]
}

// New returns an index whose endpoints hold at most capacity blocks each until SetCapacity says
// otherwise.
func New(capacity int) *Index {
	x := &Index{}
	capacity = min(max(capacity, 1), MaxCapacity)
	x.eps = byendpoint.New(func() *cache { return newCache(capacity, &x.blockSize) })
	return x
}

// SetCapacity bounds endpoint's record to blocks entries (at most MaxCapacity), dropping the
// least recently stored beyond it; the engine's own capacity (num_gpu_blocks) is the natural
// bound. Setting the capacity it has does nothing.
func (x *Index) SetCapacity(endpoint string, blocks int) {
	c := x.endpoint(endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	if blocks = min(max(blocks, 1), MaxCapacity); blocks != c.capacity {
		c.capacity = blocks
		c.evict()
	}
}

// Live reports whether endpoint's record is the engine's: a batch has been applied since its
// subscriber last lost its connection (SetLive). A cycle uses the record only then, and the
// router's own record otherwise.
func (x *Index) Live(endpoint string) bool {
	c := x.existing(endpoint)
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live && c.applied
}

// AnyLive reports whether some endpoint's record is live: whether a request's tokens are of any
// use now.
func (x *Index) AnyLive() bool {
	return x.eps.Any(func(c *cache) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.live && c.applied
	})
}

// SetLive says whether endpoint's events are arriving: its subscriber is connected. A
// disconnection forgets the batches applied: going live again needs a new one (events may have
// been lost meanwhile); a batch applied makes the record live at once.
func (x *Index) SetLive(endpoint string, live bool) {
	c := x.endpoint(endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	if !live {
		c.applied = false
	}
}

// BlockSize returns the tokens per block of endpoint's engine, from its events; 0 before any.
func (x *Index) BlockSize(endpoint string) int {
	c := x.existing(endpoint)
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blockSize
}

// FleetBlockSize returns the block size an endpoint's events last reported, whichever endpoint;
// 0 before any. A fleet serving one model has one, which a request's keys are computed at when it
// arrives.
func (x *Index) FleetBlockSize() int { return int(x.blockSize.Load()) }

// Match returns how many leading blocks of a prompt with these keys (BlockKeys of its tokens at
// the endpoint's BlockSize, first block first) endpoint's engine holds, or will hold once the
// requests the router sent it compute their prompts (Hold).
//
// Keys are chained, so a key sits at one position of any prompt and every prompt holding block
// j+1 holds block j; an engine that frees a request's blocks tail first (vLLM does) evicts block
// j+1 before block j, so what it holds of a prompt is a prefix of it. Match therefore binary
// searches for the prefix's end, in O(log n) lookups; on the rare cache where a block outlives
// its parent, it may count the parent's descendants, as the engine's own lookup, which stops at
// the first miss, would not.
func (x *Index) Match(endpoint string, keys []uint64) int {
	c := x.existing(endpoint)
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.match(keys)
}

// LiveMatch is Live, BlockSize and Match under one lock, as a cycle asks them of each endpoint:
// when endpoint's record is live, it returns how many leading blocks of a prompt it holds and
// its block size, keysAt giving the prompt's keys at that size (not called before the engine
// has said what its blocks are: blocks and bs are then 0).
func (x *Index) LiveMatch(endpoint string, keysAt func(bs int) []uint64) (blocks, bs int, live bool) {
	c := x.existing(endpoint)
	if c == nil {
		return 0, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || !c.applied {
		return 0, 0, false
	}
	if c.blockSize <= 0 {
		return 0, 0, true
	}
	return c.match(keysAt(c.blockSize)), c.blockSize, true
}

// Len returns how many blocks endpoint's record holds.
func (x *Index) Len(endpoint string) int {
	c := x.existing(endpoint)
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.engine)
}

// Stats returns endpoint's counters (the zero Stats for an endpoint never seen).
func (x *Index) Stats(endpoint string) Stats {
	c := x.existing(endpoint)
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Blocks = len(c.engine)
	return s
}

// Retain forgets every endpoint but those named in keep (the fleet's list changed).
func (x *Index) Retain(keep []string) { x.eps.Retain(keep) }

// existing returns endpoint's record, or nil.
func (x *Index) existing(name string) *cache { return x.eps.Get(name) }

// endpoint returns endpoint's record, creating it.
func (x *Index) endpoint(name string) *cache { return x.eps.Make(name) }
