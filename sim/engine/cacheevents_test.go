package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// cacheIndex is what a consumer of cache events holds: the set of findable hashes they
// describe, plus every hash it ever saw (to ask the engine about them).
type cacheIndex struct {
	set, seen map[uint64]bool
	stored    int // Stored events
	generated int // Stored events of generated blocks
	removed   int // Removed events
}

func newCacheIndex() *cacheIndex {
	return &cacheIndex{set: map[uint64]bool{}, seen: map[uint64]bool{}}
}

// chainFunc gives the hash of block j of request id and how many prompt blocks it has; ok is
// false for an unknown request or a block beyond its tokens.
type chainFunc func(id uint64, j int) (h uint64, promptBlocks int, ok bool)

// apply applies evs, all of which must be timed at (unless at < 0), checking each against the
// set before it:
// Stored adds a hash not yet findable, with the request's chain giving its hash and its parent,
// itself findable; Removed deletes a findable hash.
func (x *cacheIndex) apply(t *testing.T, evs []CacheEvent, at time.Duration, chain chainFunc) {
	t.Helper()
	for _, ev := range evs {
		if at >= 0 && ev.Time != at {
			t.Fatalf("%+v: time %v, want %v", ev, ev.Time, at)
		}
		x.seen[ev.Hash] = true
		switch ev.Kind {
		case CacheStored:
			h, prompt, ok := chain(ev.Request, ev.Block)
			if !ok || h != ev.Hash {
				t.Fatalf("%+v: request %d's block %d has hash %x (known %v)", ev, ev.Request, ev.Block, h, ok)
			}
			if x.set[ev.Hash] {
				t.Fatalf("%+v: stored, but already findable", ev)
			}
			if ev.HasParent != (ev.Block > 0) {
				t.Fatalf("%+v: HasParent must say whether the block has a predecessor", ev)
			}
			if ev.HasParent {
				if p, _, _ := chain(ev.Request, ev.Block-1); p != ev.Parent || !x.set[p] {
					t.Fatalf("%+v: parent should be %x, findable (findable: %v)", ev, p, x.set[p])
				}
			}
			if ev.Block >= prompt {
				x.generated++
			}
			x.set[ev.Hash] = true
			x.stored++
		case CacheRemoved:
			if !x.set[ev.Hash] {
				t.Fatalf("%+v: removed, but not findable", ev)
			}
			delete(x.set, ev.Hash)
			x.removed++
		default:
			t.Fatalf("unexpected event %+v", ev)
		}
	}
}

// check compares the consumer's set with the engine's: every hash the engine's table holds
// (table) and, for every hash the consumer ever saw, the engine's own lookup (findable).
func (x *cacheIndex) check(t *testing.T, step int, table map[uint64]bool, findable func(uint64) bool) {
	t.Helper()
	if diff := cmp.Diff(table, x.set); diff != "" {
		t.Fatalf("step %d: consumer's set differs from the engine's cache (-engine +consumer):\n%s", step, diff)
	}
	for h := range x.seen {
		if findable(h) != x.set[h] {
			t.Fatalf("step %d: hash %x findable %v, consumer says %v", step, h, findable(h), x.set[h])
		}
	}
}

// batchTable is the set of hashes the batch engine's hash table holds.
func batchTable(e *Batch) map[uint64]bool {
	m := map[uint64]bool{}
	for i := range int32(1) << e.kv.tableBits {
		if s := e.kv.table.get(i); s.val != nilBlock {
			m[s.key] = true
		}
	}
	return m
}

// slotTable is the set of hashes the slot engine's cache holds.
func slotTable(e *Slot) map[uint64]bool {
	m := map[uint64]bool{}
	for h := range e.cache.index {
		m[h] = true
	}
	return m
}

// randomRequests draws n requests (ids 1…n) with shared prefixes: four prefix families with
// shared runs of up to 12 blocks, follow-up turns whose prompt contains an earlier request's
// prompt and answer (OutputBlocks), prompts whose trailing hashes are left to the engine, and,
// when remote, some remote-prefill requests.
func randomRequests(rng *rand.Rand, n int, remote bool) []Request {
	const bs = 16
	unique := func(id uint64, j int, tag uint64) uint64 { return id<<24 | uint64(j)<<4 | tag | 1<<63 }
	reqs := make([]Request, 0, n)
	for i := range n {
		id := uint64(i + 1)
		var blocks []uint64
		if p := len(reqs) - 1 - rng.IntN(8); p >= 0 && rng.IntN(4) == 0 && len(reqs[p].OutputBlocks) > 0 &&
			len(reqs[p].Blocks) == reqs[p].InputTokens/bs && len(reqs[p].Blocks) < 20 {
			blocks = slices.Concat(reqs[p].Blocks, reqs[p].OutputBlocks) // a follow-up turn
		} else if f := uint64(rng.IntN(4)); rng.IntN(5) > 0 {
			for j := range rng.IntN(12) {
				blocks = append(blocks, f<<40|uint64(j))
			}
		}
		for j, end := len(blocks), len(blocks)+rng.IntN(6); j < end; j++ {
			blocks = append(blocks, unique(id, j, 1))
		}
		in := len(blocks)*bs + rng.IntN(bs)
		if in == 0 {
			in = 1 + rng.IntN(bs-1)
		}
		if rng.IntN(5) == 0 { // the engine hashes the last blocks itself
			blocks = blocks[:rng.IntN(len(blocks)+1)]
		}
		r := Request{ID: id, InputTokens: in, OutputTokens: 1 + rng.IntN(40), Blocks: blocks}
		if rng.IntN(2) == 0 {
			for j := range (in+r.OutputTokens)/bs - in/bs {
				r.OutputBlocks = append(r.OutputBlocks, unique(id, in/bs+j, 2))
			}
		}
		r.RemotePrefill = remote && rng.IntN(8) == 0
		reqs = append(reqs, r)
	}
	return reqs
}

// batchChain is the hash chain the batch engine gives reqs' blocks.
func batchChain(reqs []Request, bs int) chainFunc {
	return func(id uint64, j int) (uint64, int, bool) {
		if id < 1 || id > uint64(len(reqs)) {
			return 0, 0, false
		}
		r := reqs[id-1]
		rs := reqState{id: r.ID, input: r.InputTokens, prompt: r.Blocks, outBlocks: r.OutputBlocks}
		return rs.hashAt(j, bs), r.InputTokens / bs, j >= 0 && j < (r.InputTokens+r.OutputTokens)/bs
	}
}

// slotChain is the hash chain the slot engine gives reqs' prompt blocks.
func slotChain(reqs []Request, bs int) chainFunc {
	return func(id uint64, j int) (uint64, int, bool) {
		if id < 1 || id > uint64(len(reqs)) {
			return 0, 0, false
		}
		r := reqs[id-1]
		rs := slotReq{id: r.ID, prompt: r.Blocks}
		return rs.hashAt(j, bs), r.InputTokens / bs, j >= 0 && j < r.InputTokens/bs
	}
}

// feed adds the next requests of reqs (0–2 of them) at now and, now and then, aborts one added
// earlier; it returns how many were added.
func feed(t *testing.T, rng *rand.Rand, e Engine, reqs []Request, next int, now time.Duration) int {
	t.Helper()
	for range rng.IntN(3) {
		if next < len(reqs) {
			if err := e.Add(reqs[next], now); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	if next > 0 && rng.IntN(25) == 0 {
		before := e.TakeCacheEvents(nil)
		e.Abort(reqs[rng.IntN(next)].ID)
		if after := e.TakeCacheEvents(nil); len(after) != 0 {
			t.Fatalf("Abort logged %v", after)
		}
		if len(before) != 0 {
			t.Fatal("events left in the log after the step")
		}
	}
	return next
}

// TestBatchCacheEventsTrackTheCache runs a batch engine with a small cache (evictions,
// preemptions, duplicate blocks, remote prefills, aborts) and after every step applies its cache
// events to a set: the set is exactly the engine's findable hashes, every Stored event names
// its request's block and a findable parent, and every event is timed at the step's end.
func TestBatchCacheEventsTrackTheCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := pdConfig()
	cfg.NumGPUBlocks = 48
	e := newEngine(t, cfg)
	e.RecordCacheEvents()
	reqs := randomRequests(rng, 400, true)
	chain := batchChain(reqs, cfg.BlockSize)
	x := newCacheIndex()
	dupSteps := 0
	var evs []CacheEvent
	for i, next := 0, 0; next < len(reqs) || e.Busy(); i++ {
		next = feed(t, rng, e, reqs, next, e.Clock())
		res := e.Step(e.NextStep())
		evs = e.TakeCacheEvents(evs[:0])
		x.apply(t, evs, res.End, chain)
		x.check(t, i, batchTable(e), func(h uint64) bool { return e.kv.lookup(h) != nilBlock })
		for b := range e.kv.numBlocks {
			if e.kv.get(b).dup != nilBlock {
				dupSteps++
				break
			}
		}
	}
	m := e.Metrics()
	t.Logf("%d stored (%d generated blocks), %d removed, %d preemptions, %d steps with duplicate blocks",
		x.stored, x.generated, x.removed, m.Preemptions, dupSteps)
	if x.generated == 0 || x.removed < 100 || m.Preemptions == 0 || dupSteps == 0 {
		t.Error("the workload is too easy: it needs generated blocks, evictions, preemptions and duplicates")
	}
}

// TestSlotCacheEventsTrackTheCache is the same for the slot family: its LRU cache of prompt
// blocks, events timed at the instant Step processed.
func TestSlotCacheEventsTrackTheCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := slotTestConfig()
	cfg.NumGPUBlocks = 24
	e := newSlot(t, cfg)
	e.RecordCacheEvents()
	reqs := randomRequests(rng, 400, false)
	chain := slotChain(reqs, cfg.BlockSize)
	x := newCacheIndex()
	var evs []CacheEvent
	for i, next := 0, 0; next < len(reqs) || e.Busy(); i++ {
		next = feed(t, rng, e, reqs, next, e.Clock())
		res := e.Step(e.NextStep())
		evs = e.TakeCacheEvents(evs[:0])
		x.apply(t, evs, res.Start, chain)
		x.check(t, i, slotTable(e), func(h uint64) bool { return e.cache.lookup(h) >= 0 })
	}
	t.Logf("%d stored, %d removed", x.stored, x.removed)
	if x.removed < 100 || x.generated != 0 {
		t.Errorf("%d removed (want evictions), %d generated blocks stored (the slot cache holds prompts only)", x.removed, x.generated)
	}
}

// TestCacheEventsOffByDefault: an engine that was not asked logs nothing and allocates no log.
func TestCacheEventsOffByDefault(t *testing.T) {
	cfg := pdConfig()
	cfg.NumGPUBlocks = 48
	b := newEngine(t, cfg)
	scfg := slotTestConfig()
	scfg.NumGPUBlocks = 24
	s := newSlot(t, scfg)
	for _, e := range []Engine{b, s} {
		rng := rand.New(rand.NewPCG(5, 6))
		reqs := randomRequests(rng, 100, e == Engine(b))
		for next := 0; next < len(reqs) || e.Busy(); {
			next = feed(t, rng, e, reqs, next, e.Clock())
			e.Step(e.NextStep())
			if got := e.TakeCacheEvents(nil); got != nil {
				t.Fatalf("%T: logged %v", e, got)
			}
		}
	}
	if b.kv.log != nil || s.cache.log != nil {
		t.Error("a log was allocated")
	}
}

// TestCacheEventsSpeculate: nothing done inside Speculate is logged or changes the log — not
// its steps, its deferred registrations (flushed by lookups and by a Clone inside) nor their
// rollback — and inside it the log is suspended. The speculating engine logs exactly what a
// twin that never speculates logs, including events left untaken across a speculation.
func TestCacheEventsSpeculate(t *testing.T) {
	cfg := pdConfig()
	cfg.NumGPUBlocks = 48
	scfg := slotTestConfig()
	scfg.NumGPUBlocks = 24
	pairs := [][2]Engine{{newEngine(t, cfg), newEngine(t, cfg)}, {newSlot(t, scfg), newSlot(t, scfg)}}
	for _, p := range pairs {
		e, twin := p[0], p[1]
		e.RecordCacheEvents()
		twin.RecordCacheEvents()
		_, batch := e.(*Batch)
		rng := rand.New(rand.NewPCG(7, 8))
		reqs := randomRequests(rng, 200, batch)
		var got, want []CacheEvent
		for i, next := 0, 0; next < len(reqs) || e.Busy(); i++ {
			n := min(next+rng.IntN(3), len(reqs))
			for ; next < n; next++ {
				for _, x := range p {
					if err := x.Add(reqs[next], x.Clock()); err != nil {
						t.Fatal(err)
					}
				}
			}
			e.Speculate(func(s Engine) {
				s.RecordCacheEvents()
				if evs := s.TakeCacheEvents(nil); len(evs) != 0 {
					t.Fatalf("%T: TakeCacheEvents inside Speculate returned %d events", s, len(evs))
				}
				r := reqs[rng.IntN(len(reqs))]
				r.ID = 1e6 + uint64(i)
				if err := s.Add(r, s.Clock()); err != nil {
					t.Fatal(err)
				}
				for k := 0; k < 8 && s.Busy(); k++ {
					s.Step(s.NextStep())
					if k == 3 {
						switch c := s.(type) {
						case *Batch:
							c.Clone().Step(c.NextStep())
						case *Slot:
							c.Clone().Step(c.NextStep())
						}
					}
				}
			})
			e.Step(e.NextStep())
			twin.Step(twin.NextStep())
			if i%3 == 0 { // leave events untaken across some speculations
				got, want = e.TakeCacheEvents(got), twin.TakeCacheEvents(want)
			}
		}
		got, want = e.TakeCacheEvents(got), twin.TakeCacheEvents(want)
		if len(want) < 100 {
			t.Fatalf("%T: only %d events", e, len(want))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%T: the speculating engine's log differs from its twin's (-twin +speculating):\n%s", e, diff)
		}
	}
}

// TestCacheEventsClone: a clone's log starts empty and off, even when its original has events
// untaken; turned on, it continues from the clone's cache, which is the original's when cloned.
func TestCacheEventsClone(t *testing.T) {
	cfg := pdConfig()
	cfg.NumGPUBlocks = 48
	e := newEngine(t, cfg)
	e.RecordCacheEvents()
	rng := rand.New(rand.NewPCG(9, 10))
	reqs := randomRequests(rng, 200, true)
	chain := batchChain(reqs, cfg.BlockSize)
	x := newCacheIndex()
	next := 0
	for range 60 {
		next = feed(t, rng, e, reqs, next, e.Clock())
		res := e.Step(e.NextStep())
		x.apply(t, e.TakeCacheEvents(nil), res.End, chain)
	}
	for len(e.kv.log) == 0 { // leave a step's events untaken
		next = feed(t, rng, e, reqs, next, e.Clock())
		e.Step(e.NextStep())
	}
	untaken := slices.Clone(e.kv.log)
	c := e.Clone()
	for range 10 {
		c.Step(c.NextStep())
	}
	if evs := c.TakeCacheEvents(nil); len(evs) != 0 || c.kv.rec || c.kv.log != nil {
		t.Fatalf("the clone logged %d events (recording %v)", len(evs), c.kv.rec)
	}
	evs := e.TakeCacheEvents(nil)
	if diff := cmp.Diff(untaken, evs); diff != "" {
		t.Fatalf("cloning changed the original's log:\n%s", diff)
	}
	x.apply(t, evs, -1, chain)
	x.check(t, -1, batchTable(e), func(h uint64) bool { return e.kv.lookup(h) != nilBlock })

	// The original's consumer, having taken every event, follows the clone from here.
	c = e.Clone()
	c.RecordCacheEvents()
	for i := 0; next < len(reqs) || c.Busy(); i++ {
		next = feed(t, rng, c, reqs, next, c.Clock())
		res := c.Step(c.NextStep())
		x.apply(t, c.TakeCacheEvents(nil), res.End, chain)
		x.check(t, i, batchTable(c), func(h uint64) bool { return c.kv.lookup(h) != nilBlock })
	}
}

func TestCacheEventKindString(t *testing.T) {
	for k, want := range map[CacheEventKind]string{CacheStored: "stored", CacheRemoved: "removed", CacheCleared: "cleared", 9: "CacheEventKind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("%d: %q, want %q", k, got, want)
		}
	}
}
