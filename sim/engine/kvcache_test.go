package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// checkKV verifies the block pool's invariants against the requests holding blocks: the free
// queue is a consistent list of exactly the unreferenced blocks, reference counts equal the
// block tables' uses, and every registered block is findable under its hash.
func checkKV(t *testing.T, e *Batch) {
	t.Helper()
	k := &e.kv
	uses := make([]int32, k.numBlocks)
	for _, r := range slices.Concat(e.running, e.transfers) { // requests in transfer hold blocks too
		for _, b := range r.blocks {
			uses[b]++
		}
	}
	for _, q := range slices.Concat(e.waiting, e.pending) {
		if len(q.blocks) != 0 {
			t.Fatalf("request %d holds blocks outside the running and transfer lists", q.id)
		}
	}
	var n int32
	prev := nilBlock
	for b := k.head; b != nilBlock; b = k.get(b).next {
		x := k.get(b)
		if !x.free || x.ref != 0 || x.prev != prev {
			t.Fatalf("free queue entry %d: %+v (previous %d)", b, x, prev)
		}
		prev = b
		n++
	}
	if prev != k.tail || n != k.numFree {
		t.Fatalf("free queue has %d blocks ending at %d; numFree %d, tail %d", n, prev, k.numFree, k.tail)
	}
	hashes := map[uint64]bool{}
	for b := int32(1); b < k.numBlocks; b++ {
		x := k.get(b)
		if x.ref != uses[b] || x.free != (x.ref == 0) {
			t.Fatalf("block %d: %+v, used by %d requests", b, x, uses[b])
		}
		if !x.hashed {
			continue
		}
		hashes[x.hash] = true
		found := false
		for d := k.lookup(x.hash); d != nilBlock; d = k.get(d).dup {
			found = found || d == b
		}
		if !found {
			t.Fatalf("block %d registered under %x but not findable", b, x.hash)
		}
	}
	var slots int
	for i := range int32(1) << k.tableBits {
		if s := k.table.get(i); s.val != nilBlock {
			slots++
			if x := k.get(s.val); !x.hashed || x.hash != s.key {
				t.Fatalf("table slot %d points at block %d: %+v", i, s.val, x)
			}
		}
	}
	if slots != len(hashes) {
		t.Fatalf("%d table entries for %d distinct hashes", slots, len(hashes))
	}
}

func TestKVInvariantsUnderLoad(t *testing.T) {
	for _, blocks := range []int{30, 60, 200} {
		cfg := testConfig()
		cfg.NumGPUBlocks = blocks
		e := newEngine(t, cfg)
		workload(t, e, 150, 0)
		c := e.Clone()
		for _, x := range []*Batch{e, c} {
			for x.Busy() {
				x.Step(x.NextStep())
				checkKV(t, x)
			}
		}
	}
}

// TestHashTable checks registration, duplicates and eviction against a plain model, with few
// hashes and a small table so that duplicates, probe collisions and deletions interleave.
func TestHashTable(t *testing.T) {
	var k kvCache
	k.init(64)
	model := map[uint64][]int32{} // hash → registered blocks, oldest first
	where := map[int32]uint64{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := int32(1 + rng.IntN(63))
		if h, ok := where[b]; ok {
			k.unregister(b)
			model[h] = slices.DeleteFunc(model[h], func(x int32) bool { return x == b })
			if len(model[h]) == 0 {
				delete(model, h)
			}
			delete(where, b)
		} else {
			h := uint64(rng.IntN(40)) << (rng.IntN(2) * 40) // small and large keys
			k.register(b, h)
			model[h] = append(model[h], b)
			where[b] = h
		}
		for h, bs := range model {
			if got := k.lookup(h); got != bs[0] {
				t.Fatalf("lookup(%x) = %d, want %d (blocks %v)", h, got, bs[0], bs)
			}
		}
	}
	if got := k.lookup(1 << 50); got != nilBlock {
		t.Errorf("lookup of an absent hash = %d", got)
	}
}

// TestCloneSharesPages checks that Clone copies no block pages and that a write copies only
// the page it touches.
func TestCloneSharesPages(t *testing.T) {
	cfg := testConfig()
	cfg.NumGPUBlocks = 2000 // 8 pages
	e := newEngine(t, cfg)
	c := e.Clone()
	for i, p := range e.kv.blocks.pages {
		if c.kv.blocks.pages[i] != p {
			t.Fatalf("page %d copied by Clone", i)
		}
	}
	add(t, c, Request{ID: 1, InputTokens: 10, OutputTokens: 2}, 0)
	c.Step(0)
	var copied int
	for i, p := range e.kv.blocks.pages {
		if c.kv.blocks.pages[i] != p {
			copied++
		}
	}
	if copied != 1 {
		t.Errorf("one small step copied %d block pages, want 1", copied)
	}
}
