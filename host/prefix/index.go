// Package prefix keeps the router's own view of which prompt prefixes each endpoint holds in its
// KV cache, so a cycle can carry each candidate's prefix match without asking the engines.
//
// The view is approximate, as in llm-d's prefix-cache scorer. When the router sends a request to
// an endpoint it records the request's prefix blocks there; when the response finishes it records
// the prompt and the answer together, because the engine caches both and frees them then (which
// makes them its most recently used), and a follow-up turn's prompt contains the answer. Each
// endpoint's record is an LRU bounded by that endpoint's cache capacity in blocks, so memory stays
// flat under any load and old prefixes age out roughly as the engine would evict them.
//
// Record notes one prompt. Send and Sent.Finish note a request's prompt at dispatch and its
// prompt and answer at the end, leaving the record exactly as two Records would, but looking each
// block up once: Send remembers where the prompt's blocks sit, and Finish moves them from there.
package prefix

import "github.com/foresight-router/foresight/internal/byendpoint"

// Index maps endpoints to the prefix blocks recently sent to them. It is safe for concurrent use.
type Index struct {
	eps *byendpoint.Map[lru]
}

// New returns an index whose endpoints hold at most capacity blocks each until SetCapacity says
// otherwise (e.g. from the engine's cache_config_info num_gpu_blocks).
func New(capacity int) *Index {
	capacity = max(capacity, 1)
	return &Index{eps: byendpoint.New(func() *lru { return newLRU(capacity) })}
}

// MaxCapacity bounds an endpoint's record whatever its engine reports: 2^20 blocks (16M tokens
// at 16 per block, far above one server's KV cache today) hold 56 MB of heap (53 bytes a block,
// measured 2026-11-25 by recording 2^20 distinct blocks and reading runtime.MemStats).
const MaxCapacity = 1 << 20

// SetCapacity bounds endpoint's record to blocks entries (at most MaxCapacity), evicting the least
// recently used beyond it. Setting the capacity it already has does nothing, so a caller may apply
// the engine's latest report on every cycle.
func (x *Index) SetCapacity(endpoint string, blocks int) {
	l := x.endpoint(endpoint)
	l.mu.Lock()
	defer l.mu.Unlock()
	if blocks = min(max(blocks, 1), MaxCapacity); blocks != l.capacity {
		l.capacity = blocks
		l.evict()
	}
}

// Record notes that endpoint received a prompt with these chained block hashes, first block first.
// The blocks become the most recently used with the first one last touched, so that when the
// record is full a prompt's tail ages out before its head, which is what later prompts share and
// without which nothing after it matches (vLLM frees a request's blocks tail first for the same
// reason).
func (x *Index) Record(endpoint string, blocks []uint64) {
	if len(blocks) == 0 {
		return
	}
	l := x.endpoint(endpoint)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(blocks) - 1; i >= 0; i-- {
		l.touch(blocks[i])
	}
	l.evict()
}

// Match returns how many leading blocks of the prompt endpoint is believed to hold.
//
// Blocks are chained hashes: a block's hash covers everything before it, so a hash sits at one
// position of any prompt, and every prompt holding block j+1 holds block j. Record touches a
// prompt tail first, so block j is always more recent than block j+1 and eviction takes j+1
// first: what the record holds of a prompt is always a prefix of it. Match therefore binary
// searches for its end, in O(log n) lookups.
func (x *Index) Match(endpoint string, blocks []uint64) int {
	l := x.existing(endpoint)
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lo, hi := 0, len(blocks) // blocks[:lo] are held, blocks[hi:] are not
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if _, ok := l.index[blocks[mid]]; ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Fraction returns Match as a fraction of the prompt's blocks, in [0, 1] (0 for an empty prompt).
func (x *Index) Fraction(endpoint string, blocks []uint64) float64 {
	if len(blocks) == 0 {
		return 0
	}
	return float64(x.Match(endpoint, blocks)) / float64(len(blocks))
}

// Retain forgets every endpoint but those named in keep (the fleet's list changed).
func (x *Index) Retain(keep []string) { x.eps.Retain(keep) }

// Len returns how many blocks are recorded for endpoint.
func (x *Index) Len(endpoint string) int {
	l := x.existing(endpoint)
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.index)
}

// existing returns endpoint's record, or nil.
func (x *Index) existing(name string) *lru { return x.eps.Get(name) }

// endpoint returns endpoint's record, creating it.
func (x *Index) endpoint(name string) *lru { return x.eps.Make(name) }
