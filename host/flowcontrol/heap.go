package flowcontrol

import "time"

// entry is a queued item with its bookkeeping: its place in its flow's heap and in the queue's
// expiry heap, so that Remove and Expire take it out of both in O(log n).
type entry struct {
	item   Item
	seq    uint64    // push order, the last tie-break everywhere: orders are total and deterministic
	expiry time.Time // arrival + the band's TTL
	flow   *flow
	late   bool // found hopeless: demoted to the flow's late heap
	fi, xi int  // index in the flow heap holding it, and in the expiry heap
}

// byRank orders a flow's items: rank, then arrival, then push order.
func byRank(a, b *entry) bool {
	switch {
	case a.item.Rank != b.item.Rank:
		return a.item.Rank < b.item.Rank
	case !a.item.Arrival.Equal(b.item.Arrival):
		return a.item.Arrival.Before(b.item.Arrival)
	}
	return a.seq < b.seq
}

// flowHeap is a binary min-heap of entries by rank, keeping each entry's fi current. It is
// written out rather than built on container/heap so that the hot path has no interface calls.
type flowHeap struct {
	es []*entry
}

func (h *flowHeap) less(a, b *entry) bool { return byRank(a, b) }

func (h *flowHeap) push(e *entry) {
	e.fi = len(h.es)
	h.es = append(h.es, e)
	h.up(e.fi)
}

func (h *flowHeap) remove(i int) *entry {
	e := h.es[i]
	last := len(h.es) - 1
	h.swap(i, last)
	h.es[last] = nil
	h.es = h.es[:last]
	if i < last {
		h.down(i)
		h.up(i)
	}
	return e
}

func (h *flowHeap) swap(i, j int) {
	h.es[i], h.es[j] = h.es[j], h.es[i]
	h.es[i].fi, h.es[j].fi = i, j
}

func (h *flowHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.es[i], h.es[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *flowHeap) down(i int) {
	n := len(h.es)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.less(h.es[r], h.es[c]) {
			c = r
		}
		if !h.less(h.es[c], h.es[i]) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

// expiryHeap orders every queued entry by expiry, then push order, keeping each entry's xi.
type expiryHeap []*entry

func (h expiryHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.expiry.Equal(b.expiry) {
		return a.expiry.Before(b.expiry)
	}
	return a.seq < b.seq
}

func (h expiryHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].xi, h[j].xi = i, j
}

func (h *expiryHeap) push(e *entry) {
	e.xi = len(*h)
	*h = append(*h, e)
	h.up(e.xi)
}

func (h *expiryHeap) remove(i int) {
	last := len(*h) - 1
	h.swap(i, last)
	(*h)[last] = nil
	*h = (*h)[:last]
	if i < last {
		h.down(i)
		h.up(i)
	}
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h expiryHeap) down(i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			return
		}
		h.swap(i, c)
		i = c
	}
}
