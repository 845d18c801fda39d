package proxy

import (
	"sync"

	"github.com/foresight-router/foresight/host/pipeline"
)

// ring keeps the last n decision traces.
type ring struct {
	mu   sync.Mutex
	buf  []*pipeline.Trace
	next int
	full bool
}

func newRing(n int) *ring { return &ring{buf: make([]*pipeline.Trace, n)} }

func (r *ring) add(t *pipeline.Trace) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = t
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// all returns the kept traces, oldest first.
func (r *ring) all() []*pipeline.Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]*pipeline.Trace(nil), r.buf[:r.next]...)
	}
	return append(append([]*pipeline.Trace(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// replace puts t in the place of old, if old is still kept: a decision's trace is shared with
// readers once added, so what the proxy learns later goes into a copy.
func (r *ring) replace(old, t *pipeline.Trace) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, k := range r.buf {
		if k == old {
			r.buf[i] = t
			return
		}
	}
}
