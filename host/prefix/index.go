// Package prefix keeps the router's own view of which prompt prefixes each endpoint holds in its
// KV cache, so a cycle can carry each candidate's prefix match without asking the engines.
//
// The view is approximate, as in llm-d's prefix-cache scorer: when the router sends a request to an
// endpoint it records the request's prefix blocks there; each endpoint's record is an LRU bounded
// by that endpoint's cache capacity in blocks, so memory stays flat under any load and old
// prefixes age out roughly as the engine would evict them.
package prefix

import (
	"sync"
)

// Index maps endpoints to the prefix blocks recently sent to them. It is safe for concurrent use.
type Index struct {
	defaultCapacity int

	mu  sync.RWMutex
	eps map[string]*lru
}

// New returns an index whose endpoints hold at most capacity blocks each until SetCapacity says
// otherwise (e.g. from the engine's cache_config_info num_gpu_blocks).
func New(capacity int) *Index {
	return &Index{defaultCapacity: max(capacity, 1), eps: map[string]*lru{}}
}

// SetCapacity bounds endpoint's record to blocks entries, evicting the least recently used beyond it.
func (x *Index) SetCapacity(endpoint string, blocks int) {
	l := x.endpoint(endpoint)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.capacity = max(blocks, 1)
	l.evict()
}

// Record notes that endpoint received a prompt with these chained block hashes, first block first.
func (x *Index) Record(endpoint string, blocks []uint64) {
	if len(blocks) == 0 {
		return
	}
	l := x.endpoint(endpoint)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range blocks {
		l.touch(b)
	}
	l.evict()
}

// Match returns how many leading blocks of the prompt endpoint is believed to hold. Blocks are
// chained hashes, so a prefix matches block by block and the first miss ends it.
func (x *Index) Match(endpoint string, blocks []uint64) int {
	l := x.existing(endpoint)
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, b := range blocks {
		if _, ok := l.nodes[b]; !ok {
			break
		}
		n++
	}
	return n
}

// Fraction returns Match as a fraction of the prompt's blocks, in [0, 1] (0 for an empty prompt).
func (x *Index) Fraction(endpoint string, blocks []uint64) float64 {
	if len(blocks) == 0 {
		return 0
	}
	return float64(x.Match(endpoint, blocks)) / float64(len(blocks))
}

// Remove forgets endpoint (it left the fleet or restarted with an empty cache).
func (x *Index) Remove(endpoint string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.eps, endpoint)
}

// Len returns how many blocks are recorded for endpoint.
func (x *Index) Len(endpoint string) int {
	l := x.existing(endpoint)
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.nodes)
}

// existing returns endpoint's record, or nil.
func (x *Index) existing(name string) *lru {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.eps[name]
}

// endpoint returns endpoint's record, creating it.
func (x *Index) endpoint(name string) *lru {
	if l := x.existing(name); l != nil {
		return l
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	l := x.eps[name]
	if l == nil {
		l = newLRU(x.defaultCapacity)
		x.eps[name] = l
	}
	return l
}
