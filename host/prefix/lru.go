package prefix

import (
	"sync"

	"github.com/foresight-router/foresight/internal/lrulist"
)

// lru is one endpoint's record: block hashes ordered by recency in an lrulist.List, so that
// recording a prompt allocates nothing once the record is full.
type lru struct {
	mu       sync.Mutex
	capacity int
	index    map[uint64]int32 // hash → position
	hashes   []uint64         // by position
	order    lrulist.List
	lookups  int // hashes looked up in index, for the tests of what Sent.Finish spares
}

func newLRU(capacity int) *lru {
	return &lru{capacity: capacity, index: map[uint64]int32{}, order: lrulist.New()}
}

// touch makes hash the most recently used entry, inserting it if absent, and returns its
// position.
func (l *lru) touch(hash uint64) int32 {
	l.lookups++
	if i, ok := l.index[hash]; ok {
		l.order.Front(i)
		return i
	}
	i := l.order.Add()
	if int(i) == len(l.hashes) {
		l.hashes = append(l.hashes, hash)
	} else {
		l.hashes[i] = hash
	}
	l.index[hash] = i
	return i
}

// holds reports whether position i holds hash's entry: a position noted earlier may since have
// been evicted, and reused for another hash.
func (l *lru) holds(i int32, hash uint64) bool {
	return int(i) < len(l.hashes) && l.hashes[i] == hash && !l.order.Removed(i)
}

// front makes the entry at position i the most recently used.
func (l *lru) front(i int32) { l.order.Front(i) }

// evict drops least recently used entries beyond capacity.
func (l *lru) evict() {
	for len(l.index) > l.capacity {
		i := l.order.Tail()
		l.order.Remove(i)
		delete(l.index, l.hashes[i])
	}
}
