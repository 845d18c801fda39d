package kvindex

import (
	"sync"
	"sync/atomic"

	"github.com/foresight-router/foresight/host/kvevents"
	"github.com/foresight-router/foresight/host/tokenize"
	"github.com/foresight-router/foresight/internal/lrulist"
)

// Stats counts what an endpoint's record applied and set aside.
type Stats struct {
	// Blocks is how many blocks the record holds now.
	Blocks int
	// Batches applied; Stored and Removed count blocks (hashes) of those events applied.
	Batches, Stored, Removed uint64
	// Orphans are stored blocks whose parent the record does not know (stored before the router
	// subscribed, or lost): their keys cannot be computed, so they are left out.
	Orphans uint64
	// UnknownRemoved are removed blocks the record did not hold (stored before it subscribed).
	UnknownRemoved uint64
	// Ignored are blocks of another medium than the GPU's, or of another KV cache group than 0.
	Ignored uint64
	// Malformed are events whose token ids do not fill their blocks, left out.
	Malformed uint64
	// Gaps are sequence gaps replay did not fill, Missed the batches lost in them.
	Gaps, Missed uint64
	// Restarts are publishers that started again (sequence reset), Cleared the records dropped
	// for them or for AllBlocksCleared.
	Restarts, Cleared uint64
	// Evicted are blocks dropped beyond the capacity.
	Evicted uint64
}

// cache is one endpoint's record: the engine's blocks by position, ordered by recency of storing
// (lrulist); engine maps the engine's hash to its position, keys counts the blocks of each key
// (two engine hashes share a key when the engine hashes more than the tokens: a LoRA adapter, a
// cache salt).
type cache struct {
	mu        sync.Mutex
	capacity  int
	blockSize int
	live      bool // the subscriber is connected
	applied   bool // a batch was applied since the last disconnection
	engine    map[uint64]int32
	keys      map[uint64]int32
	held      map[uint64]int32 // keys of prompts the router sent, until their requests end (Hold)
	blocks    []block          // by position
	order     lrulist.List
	scratch   []uint64      // keys of one event
	fleet     *atomic.Int64 // the index's FleetBlockSize
	stats     Stats
}

// block is one cached block.
type block struct {
	hash, key uint64
	refs      int32 // stores minus removals: vLLM stores a hash again for a duplicate block
}

func newCache(capacity int, fleet *atomic.Int64) *cache {
	return &cache{capacity: capacity, fleet: fleet, engine: map[uint64]int32{}, keys: map[uint64]int32{}, held: map[uint64]int32{},
		order: lrulist.New()}
}

// match returns how many leading keys the record holds, or holds for the router (Match).
func (c *cache) match(keys []uint64) int {
	lo, hi := 0, len(keys) // keys[:lo] are held, keys[hi:] are not
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if k := keys[mid]; c.keys[k] > 0 || c.held[k] > 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Apply applies one message of endpoint's subscriber: a restart drops the record first, a gap
// is counted (what was lost cannot be known; the capacity bound ages out what it left behind),
// and the batch's events follow in order.
func (x *Index) Apply(endpoint string, m *kvevents.Message) {
	c := x.endpoint(endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Restart {
		c.stats.Restarts++
		c.clear()
	}
	if m.Missed > 0 {
		c.stats.Gaps++
		c.stats.Missed += m.Missed
	}
	for i := range m.Batch.Events {
		c.event(&m.Batch.Events[i])
	}
	c.stats.Batches++
	c.live, c.applied = true, true // a message came: the subscriber is connected
}

// Store records blocks of endpoint whose keys the caller knows: the simulator's engines hash
// blocks as its requests do, so there a key is the engine's hash.
func (x *Index) Store(endpoint string, hashes, keys []uint64) {
	c := x.endpoint(endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store(hashes, keys)
}

// Remove applies a BlockRemoved of endpoint's blocks.
func (x *Index) Remove(endpoint string, hashes []uint64) {
	c := x.endpoint(endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(hashes)
}

// event applies one event.
func (c *cache) event(ev *kvevents.Event) {
	switch ev.Kind {
	case kvevents.Cleared:
		c.clear()
		return
	case kvevents.Stored, kvevents.Removed:
	default:
		return
	}
	if (ev.Medium != "" && ev.Medium != "GPU") || ev.Group != 0 {
		c.stats.Ignored += uint64(len(ev.Hashes))
		return
	}
	if ev.Kind == kvevents.Removed {
		c.remove(ev.Hashes)
		return
	}
	bs := ev.BlockSize
	if bs <= 0 && len(ev.Hashes) > 0 { // senders that leave it out (llm-d-inference-sim)
		bs = len(ev.Tokens) / len(ev.Hashes)
	}
	if bs <= 0 || len(ev.Tokens) != bs*len(ev.Hashes) {
		c.stats.Malformed++
		return
	}
	if bs != c.blockSize {
		if c.blockSize != 0 { // an engine changes its block size only by restarting
			c.clear()
		}
		c.blockSize = bs
		c.fleet.Store(int64(bs))
	}
	var parent uint64
	if ev.HasParent {
		i, ok := c.engine[ev.Parent]
		if !ok {
			c.stats.Orphans += uint64(len(ev.Hashes))
			return
		}
		parent = c.blocks[i].key
	}
	c.scratch = tokenize.BlockKeys(c.scratch[:0], parent, ev.Tokens, bs)
	c.store(ev.Hashes, c.scratch)
}

// store records hashes[i] under keys[i], most recent first.
func (c *cache) store(hashes, keys []uint64) {
	for i, h := range hashes {
		c.stats.Stored++
		if j, ok := c.engine[h]; ok {
			c.blocks[j].refs++
			c.order.Front(j)
			continue
		}
		j := c.order.Add()
		b := block{hash: h, key: keys[i], refs: 1}
		if int(j) == len(c.blocks) {
			c.blocks = append(c.blocks, b)
		} else {
			c.blocks[j] = b
		}
		c.engine[h] = j
		c.keys[keys[i]]++
	}
	c.evict()
}

// remove applies the removal of hashes.
func (c *cache) remove(hashes []uint64) {
	for _, h := range hashes {
		j, ok := c.engine[h]
		if !ok {
			c.stats.UnknownRemoved++
			continue
		}
		c.stats.Removed++
		if c.blocks[j].refs--; c.blocks[j].refs <= 0 {
			c.drop(j)
		}
	}
}

// clear drops every block.
func (c *cache) clear() {
	c.stats.Cleared++
	clear(c.engine)
	clear(c.keys)
	c.blocks = c.blocks[:0]
	c.order.Reset()
}

// evict drops the least recently stored blocks beyond capacity.
func (c *cache) evict() {
	for len(c.engine) > c.capacity {
		c.stats.Evicted++
		c.drop(c.order.Tail())
	}
}

// drop removes the block at position j.
func (c *cache) drop(j int32) {
	b := &c.blocks[j]
	c.order.Remove(j)
	delete(c.engine, b.hash)
	if c.keys[b.key]--; c.keys[b.key] <= 0 {
		delete(c.keys, b.key)
	}
}

// Clear applies an AllBlocksCleared of endpoint.
func (x *Index) Clear(endpoint string) {
	c := x.endpoint(endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
}
