package flowcontrol

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEveryItemLeavesOnce drives random pushes, pops, expiries and removals through each policy
// and checks, against a plain model, that every pushed item leaves exactly once (popped, expired,
// removed, or refused at the door), that the counts per band match after every step, that a pop
// always comes from the highest band holding items, and that an expired item had waited its TTL.
func TestEveryItemLeavesOnce(t *testing.T) {
	for _, policy := range policies {
		for seed := range uint64(20) {
			t.Run(policy+"/"+strconv.FormatUint(seed, 10), func(t *testing.T) { exercise(t, policy, seed) })
		}
	}
}

type modelItem struct {
	Item
	left string // "", or how it left
}

func exercise(t *testing.T, policy string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 22))
	q := newQueue(t, Config{
		Default: Limits{MaxRequests: 12, MaxBytes: 4000, TTL: 80 * time.Millisecond},
		Bands:   map[int]Limits{2: {MaxRequests: 5, MaxBytes: 1500, TTL: 40 * time.Millisecond}},
		Estimate: func(time.Time) time.Duration {
			return time.Duration(rng.IntN(60)) * time.Millisecond
		},
	})
	var (
		items []*modelItem
		byID  = map[string]*modelItem{}
		now   = t0
		ttl   = func(band int) time.Duration {
			return map[bool]time.Duration{true: 40, false: 80}[band == 2] * time.Millisecond
		}
		queued = func() (n map[int]int, bytes map[int]int64) {
			n, bytes = map[int]int{}, map[int]int64{}
			for _, m := range items {
				if m.left == "" {
					n[m.Band]++
					bytes[m.Band] += m.Bytes
				}
			}
			return n, bytes
		}
		leave = func(id, how string) {
			m := byID[id]
			switch {
			case m == nil:
				t.Fatalf("%s an item never pushed: %q", how, id)
			case m.left != "":
				t.Fatalf("%q left twice: %s, then %s", id, m.left, how)
			}
			m.left = how
		}
	)
	for step := range 3000 {
		now = now.Add(time.Duration(rng.IntN(4)) * time.Millisecond)
		switch op := rng.IntN(10); {
		case op < 5: // push
			id := "r" + strconv.Itoa(step)
			it := Item{
				ID:      id,
				Band:    rng.IntN(4) - 1, // -1 … 2
				Flow:    "f" + strconv.Itoa(rng.IntN(4)),
				Arrival: now,
				Bytes:   int64(rng.IntN(600)),
			}
			if rng.IntN(3) > 0 {
				it = keyed(t, policy, it, float64(rng.IntN(100)+1))
			} else {
				it = keyed(t, policy, it, 0)
			}
			m := &modelItem{Item: it}
			items = append(items, m)
			byID[id] = m
			var refused *RefusedError
			if err := q.Push(it); errors.As(err, &refused) {
				leave(id, "refused:"+refused.Reason.String())
			} else if err != nil {
				t.Fatalf("push %+v: %v", it, err)
			}
		case op < 8: // pop
			n, _ := queued()
			it, ok := pop(q, now)
			if !ok {
				if len(n) > 0 {
					t.Fatalf("step %d: pop found nothing with %v queued", step, n)
				}
				continue
			}
			for band := range n {
				if band > it.Band {
					t.Fatalf("step %d: popped %q of band %d while band %d holds items", step, it.ID, it.Band, band)
				}
			}
			leave(it.ID, "popped")
		case op < 9: // expire
			for _, s := range q.Expire(now, nil) {
				if s.Reason != ReasonTTL || now.Sub(s.Item.Arrival) < ttl(s.Item.Band) {
					t.Fatalf("step %d: %q shed with %s after %s, band TTL %s", step, s.Item.ID, s.Reason, now.Sub(s.Item.Arrival), ttl(s.Item.Band))
				}
				leave(s.Item.ID, "expired")
			}
		default: // remove a random item ever pushed, queued or not
			if len(items) == 0 {
				continue
			}
			m := items[rng.IntN(len(items))]
			it, ok := q.Remove(m.ID)
			if ok != (m.left == "") {
				t.Fatalf("step %d: remove %q answered %v, but it left as %q", step, m.ID, ok, m.left)
			}
			if ok {
				if it != m.Item {
					t.Fatalf("remove returned %+v, pushed %+v", it, m.Item)
				}
				leave(m.ID, "removed")
			}
		}
		n, bytes := queued()
		total := 0
		for band := -1; band <= 2; band++ {
			if q.Len(band) != n[band] || q.Bytes(band) != bytes[band] {
				t.Fatalf("step %d band %d: queue says %d items %d bytes, model %d and %d", step, band, q.Len(band), q.Bytes(band), n[band], bytes[band])
			}
			total += n[band]
		}
		if q.Total() != total {
			t.Fatalf("step %d: total %d, model %d", step, q.Total(), total)
		}
	}
	// Whatever is still queued leaves by a pop; then nothing is left anywhere.
	for it, ok := pop(q, now); ok; it, ok = pop(q, now) {
		leave(it.ID, "popped")
	}
	ways := map[string]int{}
	for _, m := range items {
		if m.left == "" {
			t.Fatalf("%q never left", m.ID)
		}
		ways[strings.SplitN(m.left, ":", 2)[0]]++
	}
	// The workload is sized so that every way out is taken, or the run proves less than it claims.
	for _, how := range []string{"popped", "expired", "removed", "refused"} {
		if ways[how] == 0 {
			t.Fatalf("no item %s in %d pushed: %v", how, len(items), ways)
		}
	}
	if q.Total() != 0 || len(q.expiry) != 0 || len(q.entries) != 0 {
		t.Fatalf("drained queue holds %d items, %d expiry entries, %d index entries", q.Total(), len(q.expiry), len(q.entries))
	}
	for _, b := range q.bands {
		if b.cursor != nil || len(b.flows) != 0 {
			t.Fatalf("band %d keeps %d flows after draining", b.prio, len(b.flows))
		}
	}
}
