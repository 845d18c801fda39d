package proxy

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// endpointSlots keeps the slots the detector last reported for each endpoint it judged, for
// foresight_endpoint_slots.
type endpointSlots struct {
	known atomic.Bool // byID is not empty: a verdict without slots has some to forget
	mu    sync.Mutex
	byID  map[string]int
}

// note records slots, the verdict's on c's endpoints (none: every one unknown). A detector that
// never reports slots costs a length check and an atomic load, no lock.
func (s *endpointSlots) note(c *sdk.Cycle, slots []int) {
	if len(slots) == 0 && !s.known.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = make(map[string]int, len(c.Endpoints))
	}
	for i := range c.Endpoints {
		n := 0
		if len(slots) == len(c.Endpoints) {
			n = slots[i]
		}
		if n == 0 {
			delete(s.byID, c.Endpoints[i].ID)
		} else {
			s.byID[c.Endpoints[i].ID] = n
		}
	}
	s.known.Store(len(s.byID) > 0)
}

// retain forgets the endpoints not in ids.
func (s *endpointSlots) retain(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.byID {
		if !slices.Contains(ids, id) {
			delete(s.byID, id)
		}
	}
	s.known.Store(len(s.byID) > 0)
}

// of returns the slots last reported for endpoint id; 0: unknown.
func (s *endpointSlots) of(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}
