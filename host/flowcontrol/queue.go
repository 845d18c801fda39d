package flowcontrol

import (
	"errors"
	"fmt"
	"time"
)

// Queue holds the waiting requests. It is not safe for concurrent use: the caller serialises
// every call. Push, Peek, Dispatched and Remove are O(log n) in the items of one flow plus O(log N) in all
// items (the expiry heap); Peek also scans the bands present, which are few (the priorities).
type Queue struct {
	cfg     Config
	bands   []*band // highest first
	entries map[string]*entry
	expiry  expiryHeap
	seq     uint64
	// Spent entries and flows, reused by Push so that the steady state allocates little; at most
	// maxSpare of each, and no flow whose heaps grew past maxSpareHeap, so a burst's memory is
	// returned once it drains.
	spareEntries []*entry
	spareFlows   []*flow
}

const (
	maxSpare     = 256
	maxSpareHeap = 64
)

// band is one priority's items: its flows with items form a ring; Peek serves the flow at
// the cursor, and dispatching its item moves the cursor on — round-robin, one item a turn.
type band struct {
	prio   int
	limits Limits
	n      int
	bytes  int64
	flows  map[string]*flow
	cursor *flow // nil when the band is empty
}

// flow is one fairness key's items in a band: ready holds those not yet found hopeless, late the
// hopeless ones, each by rank.
type flow struct {
	key        string
	band       *band
	ready      flowHeap
	late       flowHeap
	prev, next *flow
}

// New returns an empty queue, or the configuration's problems.
func New(cfg Config) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("configuring flow control: %w", err)
	}
	return &Queue{cfg: cfg, entries: map[string]*entry{}}, nil
}

// Push queues it, or refuses it: a *RefusedError when its band has no room (the item is not
// queued and the caller answers it with the reason), another error when the item is malformed.
func (q *Queue) Push(it Item) error {
	switch {
	case it.ID == "":
		return errors.New("item id is empty")
	case q.entries[it.ID] != nil:
		return fmt.Errorf("item %q is already queued", it.ID)
	case it.Arrival.IsZero():
		return fmt.Errorf("item %q has no arrival time", it.ID)
	case it.Bytes < 0:
		return fmt.Errorf("item %q has negative bytes %d", it.ID, it.Bytes)
	}
	b := q.band(it.Band)
	// No eviction: capacity is per band, so a newcomer of a higher band never competes with a
	// lower band's items for room, and evicting from its own band would only trade one request
	// of equal priority for another.
	var reason Reason
	switch {
	case it.Bytes > b.limits.MaxBytes:
		reason = ReasonTooLarge
	case b.n >= b.limits.MaxRequests:
		reason = ReasonBandFull
	case b.bytes+it.Bytes > b.limits.MaxBytes:
		reason = ReasonBandBytes
	}
	if reason != 0 {
		return &RefusedError{ID: it.ID, Band: it.Band, Reason: reason}
	}
	f := b.flows[it.Flow]
	if f == nil {
		f = q.newFlow(b, it.Flow)
		b.flows[it.Flow] = f
		b.join(f)
	}
	q.seq++
	e := q.newEntry()
	*e = entry{item: it, seq: q.seq, expiry: it.Arrival.Add(b.limits.TTL), flow: f}
	f.ready.push(e)
	q.expiry.push(e)
	q.entries[it.ID] = e
	b.n++
	b.bytes += it.Bytes
	return nil
}

// Peek returns the next item to dispatch at now — from the highest band with items, the flow
// whose turn it is, that flow's first item — without taking it: the caller decides whether it can
// be dispatched (a pipeline run on fresh state, the saturation detector) and then calls
// Dispatched, or leaves it at the head. ok is false when the queue is empty. Peek demotes the
// flow's leading items that became hopeless. Peek does not look at TTLs: call Expire(now) first
// so that expired items are answered, not dispatched.
func (q *Queue) Peek(now time.Time) (it Item, ok bool) {
	for _, b := range q.bands {
		if b.n == 0 {
			continue
		}
		return q.head(b.cursor, now).item, true
	}
	return Item{}, false
}

// Dispatched takes the item id out of the queue because it was dispatched, and passes its
// flow's turn on: the next Peek serves the next flow of the band. ok is false when no such item
// is queued.
func (q *Queue) Dispatched(id string) (it Item, ok bool) {
	e := q.entries[id]
	if e == nil {
		return Item{}, false
	}
	if b := e.flow.band; b.cursor == e.flow {
		b.cursor = e.flow.next
	}
	return q.Remove(id)
}

// Ahead counts the items queued in band or a higher one: a newcomer of band must queue behind
// them rather than overtake them, whatever room the detector sees.
func (q *Queue) Ahead(band int) int {
	n := 0
	for _, b := range q.bands {
		if b.prio < band {
			break
		}
		n += b.n
	}
	return n
}

// NextExpiry is when the first queued item's TTL runs out; ok is false when the queue is empty.
func (q *Queue) NextExpiry() (at time.Time, ok bool) {
	if len(q.expiry) == 0 {
		return time.Time{}, false
	}
	return q.expiry[0].expiry, true
}

// head returns f's first item, leaving it in place: the first of ready by rank once the hopeless
// items at its front are demoted, else the first of late.
func (q *Queue) head(f *flow, now time.Time) *entry {
	// An item is found hopeless when it comes to the front of ready. With the deadline as rank
	// and as HopelessAfter (slo-feasible) that finds every hopeless item before any feasible one
	// is served. Demotion is one-way: a hopeless item stays behind the others even if the
	// estimate later falls, which keeps each item's moves to one and errs towards serving those
	// that can still make it.
	if len(f.ready.es) > 0 && !f.ready.es[0].item.HopelessAfter.IsZero() {
		due := now
		if q.cfg.Estimate != nil {
			due = now.Add(q.cfg.Estimate(now))
		}
		for len(f.ready.es) > 0 {
			e := f.ready.es[0]
			if e.item.HopelessAfter.IsZero() || !e.item.HopelessAfter.Before(due) {
				break
			}
			f.ready.remove(0)
			e.late = true
			f.late.push(e)
		}
	}
	if len(f.ready.es) > 0 {
		return f.ready.es[0]
	}
	return f.late.es[0]
}

// Remove takes the item id out of the queue at once (its client went away) and returns it;
// ok is false when no such item is queued.
func (q *Queue) Remove(id string) (it Item, ok bool) {
	e := q.entries[id]
	if e == nil {
		return Item{}, false
	}
	if e.late {
		e.flow.late.remove(e.fi)
	} else {
		e.flow.ready.remove(e.fi)
	}
	it = e.item
	q.drop(e)
	return it, true
}

// Expire sheds, with ReasonTTL, every item whose band's TTL has run out at now, appending them
// to dst in expiry order and returning it.
func (q *Queue) Expire(now time.Time, dst []Shed) []Shed {
	for len(q.expiry) > 0 && !q.expiry[0].expiry.After(now) {
		e := q.expiry[0]
		if e.late {
			e.flow.late.remove(e.fi)
		} else {
			e.flow.ready.remove(e.fi)
		}
		dst = append(dst, Shed{Item: e.item, Reason: ReasonTTL})
		q.drop(e)
	}
	return dst
}

// drop forgets e, already out of its flow heap: out of the expiry heap, the index and the band's
// counts, and its flow out of the ring once empty. e is spent: the caller copies its item first.
func (q *Queue) drop(e *entry) {
	f := e.flow
	b := f.band
	q.expiry.remove(e.xi)
	delete(q.entries, e.item.ID)
	b.n--
	b.bytes -= e.item.Bytes
	if len(f.ready.es)+len(f.late.es) == 0 {
		b.leave(f)
		delete(b.flows, f.key)
		if len(q.spareFlows) < maxSpare && cap(f.ready.es) <= maxSpareHeap && cap(f.late.es) <= maxSpareHeap {
			q.spareFlows = append(q.spareFlows, f)
		}
	}
	if len(q.spareEntries) < maxSpare {
		*e = entry{}
		q.spareEntries = append(q.spareEntries, e)
	}
}

func (q *Queue) newEntry() *entry {
	if n := len(q.spareEntries); n > 0 {
		e := q.spareEntries[n-1]
		q.spareEntries = q.spareEntries[:n-1]
		return e
	}
	return &entry{}
}

// Len is how many items band holds.
func (q *Queue) Len(band int) int {
	if b := q.find(band); b != nil {
		return b.n
	}
	return 0
}

// Bytes is the sum of the sizes of band's items.
func (q *Queue) Bytes(band int) int64 {
	if b := q.find(band); b != nil {
		return b.bytes
	}
	return 0
}

// Total is how many items the queue holds in all bands.
func (q *Queue) Total() int { return len(q.entries) }

func (q *Queue) newFlow(b *band, key string) *flow {
	var f *flow
	if n := len(q.spareFlows); n > 0 {
		f = q.spareFlows[n-1]
		q.spareFlows = q.spareFlows[:n-1]
	} else {
		f = &flow{}
	}
	f.key, f.band = key, b
	return f
}

func (q *Queue) find(prio int) *band {
	for _, b := range q.bands {
		if b.prio == prio {
			return b
		}
	}
	return nil
}

// band returns prio's band, creating it in its place (highest first) on first use. Bands are
// never deleted: there are as many as priorities in use, and an empty one costs a skipped check.
func (q *Queue) band(prio int) *band {
	if b := q.find(prio); b != nil {
		return b
	}
	limits, ok := q.cfg.Bands[prio]
	if !ok {
		limits = q.cfg.Default
	}
	b := &band{prio: prio, limits: limits, flows: map[string]*flow{}}
	i := 0
	for i < len(q.bands) && q.bands[i].prio > prio {
		i++
	}
	q.bands = append(q.bands, nil)
	copy(q.bands[i+1:], q.bands[i:])
	q.bands[i] = b
	return b
}

// join puts f in the ring just before the cursor: a new flow waits for its turn behind the
// flows already waiting, at most one item each.
func (b *band) join(f *flow) {
	if b.cursor == nil {
		f.prev, f.next = f, f
		b.cursor = f
		return
	}
	p := b.cursor.prev
	f.prev, f.next = p, b.cursor
	p.next = f
	b.cursor.prev = f
}

func (b *band) leave(f *flow) {
	if f.next == f {
		b.cursor = nil
	} else {
		f.prev.next = f.next
		f.next.prev = f.prev
		if b.cursor == f {
			b.cursor = f.next
		}
	}
	f.prev, f.next = nil, nil
}
