// Package lrulist is a recency list threaded through a slice by index: the routers' prefix
// records (host/prefix, host/kvindex) keep their entries in a slice of their own and order them
// here, most recently used at the head, so that recording allocates nothing once the slices have
// grown, and an evicted entry's position is reused.
package lrulist

// None is "no position": an empty list's head and tail, the ends' links.
const None int32 = -1

// freed is the prev of a position whose entry was removed: it waits in spare.
const freed int32 = -2

// List orders positions 0, 1, … of its owner's slice by recency. The zero List is not ready:
// New returns one.
type List struct {
	links      []links
	spare      []int32 // removed positions, to reuse
	head, tail int32
}

type links struct{ prev, next int32 }

// New returns an empty list.
func New() List { return List{head: None, tail: None} }

// Add returns a position for a new entry, made the most recently used: a removed one, or the
// next at the end (the owner appends its entry when the position equals its slice's length).
func (l *List) Add() int32 {
	var i int32
	if n := len(l.spare); n > 0 {
		i, l.spare = l.spare[n-1], l.spare[:n-1]
	} else {
		i = int32(len(l.links))
		l.links = append(l.links, links{})
	}
	l.link(i)
	return i
}

// Front makes position i the most recently used.
func (l *List) Front(i int32) {
	if i != l.head {
		l.unlink(i)
		l.link(i)
	}
}

// Remove takes position i out of the list, for Add to reuse.
func (l *List) Remove(i int32) {
	l.unlink(i)
	l.links[i].prev = freed
	l.spare = append(l.spare, i)
}

// Removed reports whether position i was removed and not reused since (or never added).
func (l *List) Removed(i int32) bool { return int(i) >= len(l.links) || l.links[i].prev == freed }

// Tail returns the least recently used position, None when the list is empty.
func (l *List) Tail() int32 { return l.tail }

// Order appends the positions from the most recently used to the least to dst and returns it.
func (l *List) Order(dst []int32) []int32 {
	for i := l.head; i != None; i = l.links[i].next {
		dst = append(dst, i)
	}
	return dst
}

// Reset empties the list, keeping its memory.
func (l *List) Reset() {
	l.links, l.spare, l.head, l.tail = l.links[:0], l.spare[:0], None, None
}

// link puts the unlinked position i at the head.
func (l *List) link(i int32) {
	n := &l.links[i]
	n.prev, n.next = None, l.head
	if l.head != None {
		l.links[l.head].prev = i
	}
	l.head = i
	if l.tail == None {
		l.tail = i
	}
}

func (l *List) unlink(i int32) {
	n := &l.links[i]
	if n.prev != None {
		l.links[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next != None {
		l.links[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = None, None
}
