package prefix

import "sync"

// lru is one endpoint's record: block hashes in recency order, most recent at the head of a
// doubly linked list threaded through the map's nodes.
type lru struct {
	mu         sync.Mutex
	capacity   int
	nodes      map[uint64]*node
	head, tail *node
}

type node struct {
	hash       uint64
	prev, next *node
}

func newLRU(capacity int) *lru { return &lru{capacity: capacity, nodes: map[uint64]*node{}} }

// touch makes hash the most recently used entry, inserting it if absent.
func (l *lru) touch(hash uint64) {
	n, ok := l.nodes[hash]
	if ok {
		if l.head == n {
			return
		}
		l.unlink(n)
	} else {
		n = &node{hash: hash}
		l.nodes[hash] = n
	}
	n.next = l.head
	if l.head != nil {
		l.head.prev = n
	}
	l.head = n
	if l.tail == nil {
		l.tail = n
	}
}

func (l *lru) unlink(n *node) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

// evict drops least recently used entries beyond capacity.
func (l *lru) evict() {
	for len(l.nodes) > l.capacity {
		n := l.tail
		l.unlink(n)
		delete(l.nodes, n.hash)
	}
}
