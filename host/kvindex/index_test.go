package kvindex

import (
	"testing"

	"github.com/foresight-router/foresight/host/kvevents"
	"github.com/foresight-router/foresight/host/tokenize"
)

// engineHash stands in for an engine's own block hash: any function of the chain will do, and
// one unlike the index's keys shows that the index does not need to reproduce it.
func engineHash(key uint64) uint64 { return key*0x9e3779b97f4a7c15 + 12345 }

// prompt returns n blocks of 4-token blocks: the first shared blocks are common to every prompt
// with the same shared count, the rest are specific to id.
func prompt(id uint32, shared, n int) []uint32 {
	tokens := make([]uint32, 0, 4*n)
	for b := range n {
		for t := range 4 {
			v := uint32(1000*b + t)
			if b >= shared {
				v += id << 20
			}
			tokens = append(tokens, v)
		}
	}
	return tokens
}

// stored is the BlockStored an engine publishes for blocks [from, to) of tokens.
func stored(tokens []uint32, from, to int) kvevents.Event {
	keys := tokenize.BlockKeys(nil, 0, tokens, 4)
	ev := kvevents.Event{Kind: kvevents.Stored, Tokens: tokens[4*from : 4*to], BlockSize: 4, Medium: "GPU"}
	for _, k := range keys[from:to] {
		ev.Hashes = append(ev.Hashes, engineHash(k))
	}
	if from > 0 {
		ev.Parent, ev.HasParent = engineHash(keys[from-1]), true
	}
	return ev
}

func removed(tokens []uint32, blocks ...int) kvevents.Event {
	keys := tokenize.BlockKeys(nil, 0, tokens, 4)
	ev := kvevents.Event{Kind: kvevents.Removed}
	for _, b := range blocks {
		ev.Hashes = append(ev.Hashes, engineHash(keys[b]))
	}
	return ev
}

func apply(x *Index, ep string, events ...kvevents.Event) {
	x.Apply(ep, &kvevents.Message{Batch: kvevents.Batch{Events: events}})
}

func match(x *Index, ep string, tokens []uint32) int {
	return x.Match(ep, tokenize.BlockKeys(nil, 0, tokens, x.BlockSize(ep)))
}

func TestStoredBlocksMatchAcrossEvents(t *testing.T) {
	x := New(1000)
	a := prompt(1, 0, 6)
	// The engine stores the prompt in two steps (chunked prefill): the second event's parent is
	// the first's last block, named by the engine's hash only.
	apply(x, "e", stored(a, 0, 2), stored(a, 2, 6))
	if got := match(x, "e", a); got != 6 {
		t.Fatalf("match after storing 6 blocks = %d, want 6", got)
	}
	b := prompt(2, 3, 8) // shares a's first 3 blocks
	b = append(a[:12:12], b[12:]...)
	if got := match(x, "e", b); got != 3 {
		t.Fatalf("match of a prompt sharing 3 blocks = %d, want 3", got)
	}
	if got := match(x, "other", a); got != 0 {
		t.Fatalf("another endpoint matches %d", got)
	}
}

func TestRemovedBlocksStopMatching(t *testing.T) {
	x := New(1000)
	a := prompt(1, 0, 6)
	apply(x, "e", stored(a, 0, 6))
	apply(x, "e", removed(a, 5, 4)) // evicted tail first
	if got := match(x, "e", a); got != 4 {
		t.Fatalf("match after evicting blocks 4 and 5 = %d, want 4", got)
	}
	if s := x.Stats("e"); s.Stored != 6 || s.Removed != 2 || s.Blocks != 4 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestDuplicateStoresNeedAsManyRemovals(t *testing.T) {
	x := New(1000)
	a := prompt(1, 0, 2)
	apply(x, "e", stored(a, 0, 2), stored(a, 0, 2)) // two requests computed the same blocks
	apply(x, "e", removed(a, 1, 0))
	if got := match(x, "e", a); got != 2 {
		t.Fatalf("match after removing one of two copies = %d, want 2", got)
	}
	apply(x, "e", removed(a, 1, 0))
	if got := match(x, "e", a); got != 0 {
		t.Fatalf("match after removing both copies = %d, want 0", got)
	}
}

func TestOrphansAreLeftOut(t *testing.T) {
	x := New(1000)
	a := prompt(1, 0, 6)
	apply(x, "e", stored(a, 3, 6)) // its parent was stored before the router subscribed
	if got := match(x, "e", a); got != 0 {
		t.Fatalf("match = %d, want 0", got)
	}
	if s := x.Stats("e"); s.Orphans != 3 || s.Blocks != 0 {
		t.Fatalf("stats = %+v, want 3 orphans and no block", s)
	}
	apply(x, "e", removed(a, 5))
	if s := x.Stats("e"); s.UnknownRemoved != 1 {
		t.Fatalf("unknown removals = %d, want 1", s.UnknownRemoved)
	}
}

func TestClearRestartAndGaps(t *testing.T) {
	x := New(1000)
	a := prompt(1, 0, 4)
	apply(x, "e", stored(a, 0, 4))
	apply(x, "e", kvevents.Event{Kind: kvevents.Cleared})
	if got := match(x, "e", a); got != 0 {
		t.Fatalf("match after AllBlocksCleared = %d", got)
	}
	apply(x, "e", stored(a, 0, 4))
	x.Apply("e", &kvevents.Message{Restart: true, Batch: kvevents.Batch{Events: []kvevents.Event{stored(a, 0, 1)}}})
	if got := match(x, "e", a); got != 1 {
		t.Fatalf("match after a restart storing 1 block = %d, want 1", got)
	}
	x.Apply("e", &kvevents.Message{Missed: 3})
	if s := x.Stats("e"); s.Restarts != 1 || s.Gaps != 1 || s.Missed != 3 || s.Cleared != 2 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestOtherMediaAndGroupsIgnored(t *testing.T) {
	x := New(1000)
	a := prompt(1, 0, 2)
	cpu := stored(a, 0, 2)
	cpu.Medium = "CPU"
	group := stored(a, 0, 2)
	group.Group = 1
	bad := stored(a, 0, 2)
	bad.Tokens = bad.Tokens[:5]
	apply(x, "e", cpu, group, bad)
	if s := x.Stats("e"); s.Ignored != 4 || s.Malformed != 1 || s.Blocks != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestCapacityDropsLeastRecentlyStored(t *testing.T) {
	x := New(4)
	a, b := prompt(1, 0, 3), prompt(2, 0, 3)
	apply(x, "e", stored(a, 0, 3))
	apply(x, "e", stored(b, 0, 3)) // 6 blocks: a's first two go
	if got := match(x, "e", b); got != 3 {
		t.Fatalf("match of the recent prompt = %d, want 3", got)
	}
	if got := match(x, "e", a); got != 0 {
		t.Fatalf("match of the evicted prompt = %d, want 0 (its head went first)", got)
	}
	x.SetCapacity("e", 2)
	if got, s := x.Len("e"), x.Stats("e"); got != 2 || s.Evicted != 4 {
		t.Fatalf("after SetCapacity(2): %d blocks, %d evicted", got, s.Evicted)
	}
}

func TestLive(t *testing.T) {
	x := New(10)
	if x.Live("e") {
		t.Fatal("an endpoint never seen is live")
	}
	x.SetLive("e", true)
	if x.Live("e") {
		t.Fatal("live before any batch")
	}
	apply(x, "e")
	if !x.Live("e") {
		t.Fatal("not live after a batch")
	}
	x.SetLive("e", false)
	x.SetLive("e", true)
	if x.Live("e") {
		t.Fatal("live again after a disconnection without a new batch")
	}
}

func TestKeysStoreForTheSimulator(t *testing.T) {
	x := New(10)
	x.Store("e", []uint64{11, 12}, []uint64{11, 12})
	if got := x.Match("e", []uint64{11, 12, 13}); got != 2 {
		t.Fatalf("match = %d, want 2", got)
	}
	x.Remove("e", []uint64{12})
	if got := x.Match("e", []uint64{11, 12, 13}); got != 1 {
		t.Fatalf("match after removal = %d, want 1", got)
	}
	x.Retain(nil)
	if x.Len("e") != 0 {
		t.Fatal("Retain(nil) kept the endpoint")
	}
}

func TestHoldCountsUntilReleased(t *testing.T) {
	x := New(10)
	a := prompt(1, 0, 3)
	keys := tokenize.BlockKeys(nil, 0, a, 4)
	h1, h2 := x.Hold("e", keys), x.Hold("e", keys[:2])
	if got := x.Match("e", keys); got != 3 {
		t.Fatalf("match while held = %d, want 3", got)
	}
	h1.Release()
	h1.Release() // idempotent
	if got := x.Match("e", keys); got != 2 {
		t.Fatalf("match with the shorter hold left = %d, want 2", got)
	}
	h2.Release()
	if got := x.Match("e", keys); got != 0 {
		t.Fatalf("match after every release = %d, want 0", got)
	}
	var none *Hold
	none.Release()
	if x.Hold("e", nil) != nil {
		t.Fatal("holding no keys returned a hold")
	}
}

func TestAnyLive(t *testing.T) {
	x := New(10)
	if x.AnyLive() {
		t.Fatal("an empty index is live")
	}
	x.SetLive("a", true)
	x.SetLive("b", false)
	if x.AnyLive() {
		t.Fatal("live before any batch")
	}
	apply(x, "b")
	if !x.AnyLive() {
		t.Fatal("not live after b's batch")
	}
	x.SetLive("b", false)
	if x.AnyLive() {
		t.Fatal("live after b's disconnection")
	}
}

func TestLiveMatch(t *testing.T) {
	x := New(100)
	a := prompt(1, 0, 3)
	keysAt := func(bs int) []uint64 { return tokenize.BlockKeys(nil, 0, a, bs) }
	if _, _, live := x.LiveMatch("e", keysAt); live {
		t.Fatal("an unknown endpoint is live")
	}
	x.SetLive("e", true)
	apply(x, "e") // live, nothing stored: no block size yet
	if n, bs, live := x.LiveMatch("e", func(int) []uint64 { t.Fatal("keys asked without a block size"); return nil }); !live || n != 0 || bs != 0 {
		t.Fatalf("LiveMatch = %d, %d, %v; want 0, 0, live", n, bs, live)
	}
	apply(x, "e", stored(a, 0, 2))
	if n, bs, live := x.LiveMatch("e", keysAt); !live || n != 2 || bs != 4 {
		t.Fatalf("LiveMatch = %d, %d, %v; want 2 blocks of 4, live", n, bs, live)
	}
	x.SetLive("e", false)
	if _, _, live := x.LiveMatch("e", keysAt); live {
		t.Fatal("live after a disconnection")
	}
}
