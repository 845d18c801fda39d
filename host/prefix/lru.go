package prefix

import "sync"

// lru is one endpoint's record: block hashes in recency order, most recent at the head of a
// doubly linked list threaded through a slice of nodes by index, so that recording a prompt
// allocates nothing once the record is full.
type lru struct {
	mu         sync.Mutex
	capacity   int
	index      map[uint64]int32 // hash → position in nodes
	nodes      []node
	spare      []int32 // positions in nodes of evicted entries, to reuse
	head, tail int32
	lookups    int // hashes looked up in index, for the tests of what Sent.Finish spares
}

type node struct {
	hash       uint64
	prev, next int32
}

const none = -1

// freed is the prev of a node whose entry was evicted: its position waits in spare.
const freed = -2

func newLRU(capacity int) *lru {
	return &lru{capacity: capacity, index: map[uint64]int32{}, head: none, tail: none}
}

// touch makes hash the most recently used entry, inserting it if absent, and returns its
// position in nodes.
func (l *lru) touch(hash uint64) int32 {
	l.lookups++
	i, ok := l.index[hash]
	if !ok {
		if n := len(l.spare); n > 0 {
			i, l.spare = l.spare[n-1], l.spare[:n-1]
			l.nodes[i] = node{hash: hash, prev: none, next: none}
		} else {
			i = int32(len(l.nodes))
			l.nodes = append(l.nodes, node{hash: hash, prev: none, next: none})
		}
		l.index[hash] = i
		l.link(i)
		return i
	}
	l.front(i)
	return i
}

// holds reports whether position i holds hash's entry: a position noted earlier may since have
// been evicted, and reused for another hash.
func (l *lru) holds(i int32, hash uint64) bool {
	return int(i) < len(l.nodes) && l.nodes[i].hash == hash && l.nodes[i].prev != freed
}

// front makes the entry at position i the most recently used.
func (l *lru) front(i int32) {
	if i == l.head {
		return
	}
	l.unlink(i)
	l.link(i)
}

// link puts the unlinked entry at position i at the head.
func (l *lru) link(i int32) {
	n := &l.nodes[i]
	n.prev, n.next = none, l.head
	if l.head != none {
		l.nodes[l.head].prev = i
	}
	l.head = i
	if l.tail == none {
		l.tail = i
	}
}

func (l *lru) unlink(i int32) {
	n := &l.nodes[i]
	if n.prev != none {
		l.nodes[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next != none {
		l.nodes[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = none, none
}

// evict drops least recently used entries beyond capacity.
func (l *lru) evict() {
	for len(l.index) > l.capacity {
		i := l.tail
		l.unlink(i)
		delete(l.index, l.nodes[i].hash)
		l.nodes[i].prev = freed
		l.spare = append(l.spare, i)
	}
}
