package cluster

import (
	"github.com/foresight-router/foresight/host/kvindex"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/workload"
)

// The routers' precise prefix index (Config.KVEvents): every engine logs its cache events
// (engine.CacheEvent, vLLM's BlockStored and BlockRemoved), which reach every router at the end
// of the step that produced them, as vLLM publishes a step's events once it ends; each router
// applies them to its kvindex.Index and takes its cycles' prefix matches from it, the prompts it
// dispatched held there until their requests end (kvindex.Hold), as the live router does. The
// engines here hash blocks as the requests' Blocks do, so a block's key is its hash.
//
// And the shared fleet (Config.Direct): requests another client sends straight to a server,
// which no router sees: they load the engines and fill and evict their caches, which only the
// engines' events tell the routers.

// recordCacheEvents turns on every engine's cache-event log and gives every view its index.
func (s *sim) recordCacheEvents() {
	for i, e := range s.engines {
		e.RecordCacheEvents()
		for _, v := range s.views {
			if v.kv == nil {
				v.kv = kvindex.New(kvindex.MaxCapacity)
			}
			v.kv.SetCapacity(s.ids[i], s.cfg.Engines[i].NumGPUBlocks)
		}
	}
}

// applyCacheEvents applies engine i's logged events to every router's index, a run of one kind
// at a time.
func (s *sim) applyCacheEvents(i int, events []engine.CacheEvent) {
	id := s.ids[i]
	for len(events) > 0 {
		kind, n := events[0].Kind, 1
		for n < len(events) && events[n].Kind == kind {
			n++
		}
		s.hashes = s.hashes[:0]
		for _, ev := range events[:n] {
			s.hashes = append(s.hashes, ev.Hash)
		}
		for _, v := range s.views {
			switch kind {
			case engine.CacheStored:
				v.kv.Store(id, s.hashes, s.hashes)
			case engine.CacheRemoved:
				v.kv.Remove(id, s.hashes)
			case engine.CacheCleared:
				v.kv.Clear(id)
			}
		}
		events = events[n:]
	}
}

// prefixMatch is the fraction of r's prompt blocks replica v believes server i holds: from the
// engines' events with Config.KVEvents, else from v's record of what it sent.
func (s *sim) prefixMatch(v *view, i int, r *workload.Request) float64 {
	if v.kv == nil {
		return v.prefix.Fraction(s.ids[i], r.Blocks)
	}
	if len(r.Blocks) == 0 {
		return 0
	}
	return float64(v.kv.Match(s.ids[i], r.Blocks)) / float64(len(r.Blocks))
}

// direct sends request n straight to server i at its arrival, as the other client of a shared
// fleet does: no router sees it.
func (s *sim) direct(n, i int) error {
	r := &s.reqs[n]
	if err := s.engines[i].Add(s.engineRequest(n), r.Arrival); err != nil {
		return err
	}
	o := &s.outcomes[n]
	o.Server, o.Direct = s.ids[i], true
	s.flights[n] = &flight{idx: n, replica: &view{}}
	return nil
}
