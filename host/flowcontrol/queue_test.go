package flowcontrol

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// roomy bounds a band far beyond what a test pushes, with a TTL no test reaches unless it means to.
var roomy = Limits{MaxRequests: 1000, MaxBytes: 1 << 30, TTL: time.Hour}

func newQueue(t *testing.T, cfg Config) *Queue {
	t.Helper()
	if cfg.Default == (Limits{}) {
		cfg.Default = roomy
	}
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func mustPush(t *testing.T, q *Queue, items ...Item) {
	t.Helper()
	for _, it := range items {
		if err := q.Push(it); err != nil {
			t.Fatalf("pushing %q: %v", it.ID, err)
		}
	}
}

// pop takes the next item as a caller does: Peek, then Dispatched.
func pop(q *Queue, now time.Time) (Item, bool) {
	it, ok := q.Peek(now)
	if ok {
		q.Dispatched(it.ID)
	}
	return it, ok
}

// drain pops everything at now and returns the ids in pop order.
func drain(q *Queue, now time.Time) []string {
	var ids []string
	for {
		it, ok := pop(q, now)
		if !ok {
			return ids
		}
		ids = append(ids, it.ID)
	}
}

func TestBandOrder(t *testing.T) {
	q := newQueue(t, Config{})
	// Pushed low band first: the higher band still goes first, and a negative (sheddable) band last.
	mustPush(t, q,
		Item{ID: "s1", Band: -1, Arrival: at(0)},
		Item{ID: "n1", Band: 0, Arrival: at(1)},
		Item{ID: "c1", Band: 2, Arrival: at(2)},
		Item{ID: "n2", Band: 0, Arrival: at(3)},
		Item{ID: "c2", Band: 2, Arrival: at(4)},
	)
	got := drain(q, at(10))
	want := []string{"c1", "c2", "n1", "n2", "s1"}
	if !slices.Equal(got, want) {
		t.Fatalf("pop order %v, want %v", got, want)
	}
	if _, ok := pop(q, at(10)); ok {
		t.Fatal("an empty queue popped an item")
	}
}

func TestFairness(t *testing.T) {
	q := newQueue(t, Config{})
	// The loud flow sends 5 items per millisecond, the quiet one 1, for 4 ms: 24 items, all queued
	// before the first pop. Round-robin serves the flows in turn, so quiet's k-th item leaves at
	// pop 2k-1 (quiet joined second, behind loud's first item): one loud item between each.
	var pushed int
	for ms := range 4 {
		for i := range 5 {
			mustPush(t, q, Item{ID: "loud-" + strconv.Itoa(ms*5+i), Flow: "loud", Arrival: at(ms)})
			pushed++
			if i == 0 {
				mustPush(t, q, Item{ID: "quiet-" + strconv.Itoa(ms), Flow: "quiet", Arrival: at(ms)})
				pushed++
			}
		}
	}
	got := drain(q, at(10))
	if len(got) != pushed {
		t.Fatalf("popped %d of %d", len(got), pushed)
	}
	var quietAt []int
	for i, id := range got {
		if strings.HasPrefix(id, "quiet-") {
			quietAt = append(quietAt, i)
		}
	}
	// Pop positions (0-based): loud-0, quiet-0, loud-1, quiet-1, ... → quiet at 1, 3, 5, 7.
	if want := []int{1, 3, 5, 7}; !slices.Equal(quietAt, want) {
		t.Fatalf("quiet items popped at %v, want %v (order %v)", quietAt, want, got)
	}
}

func TestFairnessLateJoiner(t *testing.T) {
	q := newQueue(t, Config{})
	// a and b have 2 items each; after one pop (a-0) the turn is b's, and c arrives. c joins the
	// ring just before the cursor, that is at the end of the round b, a: it waits one item of each
	// flow already waiting, then the round goes on from b.
	mustPush(t, q,
		Item{ID: "a-0", Flow: "a", Arrival: at(0)}, Item{ID: "a-1", Flow: "a", Arrival: at(0)},
		Item{ID: "b-0", Flow: "b", Arrival: at(0)}, Item{ID: "b-1", Flow: "b", Arrival: at(0)},
	)
	first, _ := pop(q, at(1))
	mustPush(t, q, Item{ID: "c-0", Flow: "c", Arrival: at(1)})
	got := append([]string{first.ID}, drain(q, at(2))...)
	want := []string{"a-0", "b-0", "a-1", "c-0", "b-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("pop order %v, want %v", got, want)
	}
}

func TestCapacity(t *testing.T) {
	cfg := Config{
		Default: Limits{MaxRequests: 2, MaxBytes: 100, TTL: time.Second},
		Bands:   map[int]Limits{1: {MaxRequests: 3, MaxBytes: 1000, TTL: time.Second}},
	}
	tests := []struct {
		name string
		push Item
		want Reason // 0: queued
	}{
		{"first of band 0", Item{ID: "a", Arrival: at(0), Bytes: 60}, 0},
		{"60 + 50 > 100 bytes", Item{ID: "b", Arrival: at(0), Bytes: 50}, ReasonBandBytes},
		{"60 + 40 = 100 bytes fits", Item{ID: "c", Arrival: at(0), Bytes: 40}, 0},
		{"2 requests already", Item{ID: "d", Arrival: at(0)}, ReasonBandFull},
		{"101 bytes alone never fit band 0", Item{ID: "e", Band: 0, Arrival: at(0), Bytes: 101}, ReasonTooLarge},
		{"band 1 has its own room", Item{ID: "f", Band: 1, Arrival: at(0), Bytes: 900}, 0},
		{"band 1: 900 + 101 > 1000", Item{ID: "g", Band: 1, Arrival: at(0), Bytes: 101}, ReasonBandBytes},
	}
	q := newQueue(t, cfg)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := q.Push(tt.push)
			var refused *RefusedError
			switch {
			case tt.want == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != 0 && !errors.As(err, &refused):
				t.Fatalf("got %v, want a refusal with %s", err, tt.want)
			case tt.want != 0 && (refused.Reason != tt.want || refused.ID != tt.push.ID || refused.Band != tt.push.Band):
				t.Fatalf("got %+v, want reason %s for %q in band %d", refused, tt.want, tt.push.ID, tt.push.Band)
			}
		})
	}
	// Band 0 holds a (60) and c (40), band 1 holds f (900).
	if q.Len(0) != 2 || q.Bytes(0) != 100 || q.Len(1) != 1 || q.Bytes(1) != 900 || q.Total() != 3 {
		t.Fatalf("band 0: %d items %d bytes, band 1: %d items %d bytes, total %d; want 2/100, 1/900, 3",
			q.Len(0), q.Bytes(0), q.Len(1), q.Bytes(1), q.Total())
	}
	// Popping a (band 1 first: f, then a) frees 60 bytes and a slot: b (50) fits now.
	drained := []string{}
	for range 2 {
		it, _ := pop(q, at(1))
		drained = append(drained, it.ID)
	}
	if want := []string{"f", "a"}; !slices.Equal(drained, want) {
		t.Fatalf("popped %v, want %v", drained, want)
	}
	mustPush(t, q, Item{ID: "b", Arrival: at(1), Bytes: 50})
	if q.Len(0) != 2 || q.Bytes(0) != 90 {
		t.Fatalf("band 0 after the retry: %d items %d bytes, want 2 and 40 + 50 = 90", q.Len(0), q.Bytes(0))
	}
}

func TestTTL(t *testing.T) {
	q := newQueue(t, Config{
		Default: Limits{MaxRequests: 10, MaxBytes: 1000, TTL: 100 * time.Millisecond},
		Bands:   map[int]Limits{1: {MaxRequests: 10, MaxBytes: 1000, TTL: 30 * time.Millisecond}},
	})
	mustPush(t, q,
		Item{ID: "a", Arrival: at(0), Bytes: 10},                                             // expires at 100
		Item{ID: "b", Arrival: at(50), Bytes: 20},                                            // expires at 150
		Item{ID: "c", Band: 1, Arrival: at(10), Flow: "x"},                                   // band 1's TTL: expires at 40
		keyed(t, flowpolicy.PolicySLOFeasible, Item{ID: "d", Arrival: at(20), Flow: "y"}, 5), // expires at 120, deadline irrelevant
	)
	steps := []struct {
		now  int
		want []string
	}{
		{39, nil},
		{40, []string{"c"}}, // at its expiry exactly: shed
		{99, nil},
		{120, []string{"a", "d"}}, // in expiry order: 100, 120
	}
	for _, s := range steps {
		got := q.Expire(at(s.now), nil)
		var ids []string
		for _, sh := range got {
			if sh.Reason != ReasonTTL {
				t.Fatalf("at %d ms: %q shed with %s, want %s", s.now, sh.Item.ID, sh.Reason, ReasonTTL)
			}
			ids = append(ids, sh.Item.ID)
		}
		if !slices.Equal(ids, s.want) {
			t.Fatalf("at %d ms expired %v, want %v", s.now, ids, s.want)
		}
	}
	if q.Len(0) != 1 || q.Bytes(0) != 20 || q.Len(1) != 0 {
		t.Fatalf("after expiry: band 0 %d items %d bytes, band 1 %d items; want 1, 20, 0", q.Len(0), q.Bytes(0), q.Len(1))
	}
	if got := drain(q, at(120)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("left %v, want [b]", got)
	}
}

func TestRemove(t *testing.T) {
	q := newQueue(t, Config{})
	mustPush(t, q,
		Item{ID: "a", Flow: "x", Arrival: at(0), Bytes: 1},
		Item{ID: "b", Flow: "x", Arrival: at(1), Bytes: 2},
		Item{ID: "c", Flow: "y", Arrival: at(2), Bytes: 4},
		Item{ID: "d", Flow: "x", Arrival: at(3), Bytes: 8},
	)
	// b leaves from the middle of flow x; c empties flow y, which leaves the ring.
	for _, id := range []string{"b", "c"} {
		if it, ok := q.Remove(id); !ok || it.ID != id {
			t.Fatalf("removing %q: got %q, %v", id, it.ID, ok)
		}
	}
	if _, ok := q.Remove("c"); ok {
		t.Fatal("removed c twice")
	}
	if _, ok := q.Remove("nobody"); ok {
		t.Fatal("removed an unknown id")
	}
	if q.Len(0) != 2 || q.Bytes(0) != 9 {
		t.Fatalf("band 0: %d items %d bytes, want 2 and 1 + 8 = 9", q.Len(0), q.Bytes(0))
	}
	// A removed item no longer expires.
	if got := q.Expire(at(0).Add(2*time.Hour), nil); len(got) != 2 || got[0].Item.ID != "a" || got[1].Item.ID != "d" {
		t.Fatalf("expired %v, want a and d only", got)
	}
	// The id is free again once removed.
	mustPush(t, q, Item{ID: "b", Arrival: at(5)})
}

func TestPushRejectsMalformedItems(t *testing.T) {
	q := newQueue(t, Config{})
	mustPush(t, q, Item{ID: "a", Arrival: at(0)})
	tests := []struct {
		item Item
		want string
	}{
		{Item{Arrival: at(0)}, "item id is empty"},
		{Item{ID: "a", Arrival: at(0)}, `item "a" is already queued`},
		{Item{ID: "b"}, `item "b" has no arrival time`},
		{Item{ID: "c", Arrival: at(0), Bytes: -1}, `item "c" has negative bytes -1`},
	}
	for _, tt := range tests {
		err := q.Push(tt.item)
		var refused *RefusedError
		if err == nil || errors.As(err, &refused) || err.Error() != tt.want {
			t.Errorf("push %+v: got %v, want %q", tt.item, err, tt.want)
		}
	}
	if q.Total() != 1 {
		t.Fatalf("total %d after malformed pushes, want 1", q.Total())
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{
		Default: Limits{MaxRequests: 0, MaxBytes: 1, TTL: time.Second},
		Bands:   map[int]Limits{3: {MaxRequests: 1, MaxBytes: -5, TTL: 0}},
	}.Validate()
	for _, want := range []string{
		"default.maxRequests must be > 0, got 0",
		"bands[3].maxBytes must be > 0, got -5",
		"bands[3].ttl must be > 0, got 0s",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validation %v lacks %q", err, want)
		}
	}
	if _, err := New(Config{}); err == nil || !strings.HasPrefix(err.Error(), "configuring flow control: ") {
		t.Errorf("New with zero limits: %v", err)
	}
}

func TestPeekThenDispatched(t *testing.T) {
	q := newQueue(t, Config{})
	mustPush(t, q,
		Item{ID: "a1", Flow: "a", Arrival: at(0)},
		Item{ID: "a2", Flow: "a", Arrival: at(1)},
		Item{ID: "b1", Flow: "b", Arrival: at(2)},
		Item{ID: "c1", Band: 1, Arrival: at(3)},
	)
	// Peek shows the head and leaves it: asking twice gives the same item, and nothing moved.
	for range 2 {
		if it, ok := q.Peek(at(5)); !ok || it.ID != "c1" {
			t.Fatalf("peek = %q %v, want c1", it.ID, ok)
		}
	}
	if q.Total() != 4 {
		t.Fatalf("peek took an item: %d left, want 4", q.Total())
	}
	// Ahead counts what a newcomer of each band must queue behind.
	for band, want := range map[int]int{2: 0, 1: 1, 0: 4, -1: 4} {
		if got := q.Ahead(band); got != want {
			t.Errorf("Ahead(%d) = %d, want %d", band, got, want)
		}
	}
	if _, ok := q.Dispatched("c1"); !ok {
		t.Fatal("c1 was not dispatched")
	}
	// Band 0: a's turn, then b's — dispatching a1 passed the turn on, so b1 comes before a2.
	if it, _ := q.Peek(at(5)); it.ID != "a1" {
		t.Fatalf("peek = %q, want a1", it.ID)
	}
	q.Dispatched("a1")
	if got, want := drain(q, at(5)), []string{"b1", "a2"}; !slices.Equal(got, want) {
		t.Fatalf("after a1: %v, want %v", got, want)
	}
	// Dispatching an item not at the cursor keeps the turn where it was.
	mustPush(t, q,
		Item{ID: "a3", Flow: "a", Arrival: at(6)},
		Item{ID: "b2", Flow: "b", Arrival: at(7)},
		Item{ID: "b3", Flow: "b", Arrival: at(8)},
	)
	q.Dispatched("b2")
	if got, want := drain(q, at(9)), []string{"a3", "b3"}; !slices.Equal(got, want) {
		t.Fatalf("after b2: %v, want %v", got, want)
	}
	if _, ok := q.Dispatched("a3"); ok {
		t.Fatal("an item no longer queued was dispatched")
	}
}

func TestNextExpiry(t *testing.T) {
	q := newQueue(t, Config{Default: Limits{MaxRequests: 10, MaxBytes: 100, TTL: time.Second},
		Bands: map[int]Limits{1: {MaxRequests: 10, MaxBytes: 100, TTL: 100 * time.Millisecond}}})
	if _, ok := q.NextExpiry(); ok {
		t.Fatal("an empty queue has an expiry")
	}
	mustPush(t, q, Item{ID: "slow", Arrival: at(0)}, Item{ID: "fast", Band: 1, Arrival: at(50)})
	if got, ok := q.NextExpiry(); !ok || !got.Equal(at(150)) {
		t.Fatalf("next expiry %v %v, want %v", got, ok, at(150))
	}
	q.Remove("fast")
	if got, _ := q.NextExpiry(); !got.Equal(at(1000)) {
		t.Fatalf("next expiry %v, want %v", got, at(1000))
	}
}
