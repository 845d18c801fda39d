package kvindex

import "sync/atomic"

// Hold is a prompt the router sent to an endpoint, counted as cached there until Release.
//
// The engine reports a prompt's blocks only once a step has computed them, after the request's
// wait in its queue: until then, a request with the same prefix that the events alone would
// spread elsewhere is better sent after it, where the prefix will be computed once. And while
// the request runs, its blocks are referenced and cannot be evicted. So the router holds a
// dispatched prompt's keys in the endpoint's record from dispatch to the request's end, by when
// the engine's events say whether the blocks are still cached.
type Hold struct {
	c        *cache
	keys     []uint64
	released atomic.Bool
}

// Hold counts keys (a prompt's, first block first) as cached on endpoint until Release. keys
// must not be modified until then.
func (x *Index) Hold(endpoint string, keys []uint64) *Hold {
	if len(keys) == 0 {
		return nil
	}
	c := x.endpoint(endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		c.held[k]++
	}
	return &Hold{c: c, keys: keys}
}

// Release ends the hold; it is idempotent and does nothing on a nil Hold. After Retain forgot
// the endpoint, it releases from the forgotten record.
func (h *Hold) Release() {
	if h == nil || h.released.Swap(true) {
		return
	}
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range h.keys {
		if c.held[k]--; c.held[k] <= 0 {
			delete(c.held, k)
		}
	}
}
