// Package byendpoint is a concurrent map from endpoint IDs to records made on first use, which
// the routers' per-endpoint records (host/prefix, host/kvindex) keep theirs in.
package byendpoint

import (
	"slices"
	"sync"
)

// Map maps endpoint IDs to records of type T. It is safe for concurrent use; the records guard
// themselves.
type Map[T any] struct {
	make func() *T
	mu   sync.RWMutex
	m    map[string]*T
}

// New returns an empty map whose records make makes.
func New[T any](make func() *T) *Map[T] {
	return &Map[T]{make: make, m: map[string]*T{}}
}

// Get returns endpoint's record, or nil.
func (m *Map[T]) Get(endpoint string) *T {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.m[endpoint]
}

// Make returns endpoint's record, making it first if it has none.
func (m *Map[T]) Make(endpoint string) *T {
	if r := m.Get(endpoint); r != nil {
		return r
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.m[endpoint]
	if r == nil {
		r = m.make()
		m.m[endpoint] = r
	}
	return r
}

// Any reports whether f is true of some endpoint's record (in no set order).
func (m *Map[T]) Any(f func(*T) bool) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, r := range m.m {
		if f(r) {
			return true
		}
	}
	return false
}

// Retain forgets every endpoint but those named in keep.
func (m *Map[T]) Retain(keep []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.m {
		if !slices.Contains(keep, name) {
			delete(m.m, name)
		}
	}
}
