package engine

import (
	"slices"
	"sync/atomic"
)

// Pages of 64 entries: a page of blocks is 2 KiB, a page of hash-table slots 1 KiB. A step of a
// busy engine writes to ~100 scattered pages (a finished request frees blocks all over the
// pool), which a clone then copies; Clone itself copies one pointer per page (~3,000 at the
// TP 2 preset). BenchmarkCloneStep measured 64 entries as the best of 32–256.
const (
	pageBits = 6
	pageLen  = 1 << pageBits
	pageMask = pageLen - 1
)

// ownerSeq hands out owner ids. A page belongs to the engine whose owner id it carries; any
// other engine that wants to write to it copies it first.
var ownerSeq atomic.Uint64

func newOwner() uint64 { return ownerSeq.Add(1) }

type page[T any] struct {
	owner uint64
	data  [pageLen]T
}

// cowArray is a fixed-length array stored in pages that clones share until one of them writes:
// Clone copies only the page table, and a write to a page the writer does not own copies that
// page first. Reads never copy.
type cowArray[T any] struct {
	pages []*page[T]
}

func newCowArray[T any](n int, owner uint64, fill T) cowArray[T] {
	pages := make([]*page[T], (n+pageLen-1)/pageLen)
	for i := range pages {
		p := &page[T]{owner: owner}
		for j := range p.data {
			p.data[j] = fill
		}
		pages[i] = p
	}
	return cowArray[T]{pages: pages}
}

// get returns element i.
func (a *cowArray[T]) get(i int32) T {
	return a.pages[i>>pageBits].data[i&pageMask]
}

// mut returns a pointer to element i that owner may write through, copying the page first
// when owner does not own it.
func (a *cowArray[T]) mut(i int32, owner uint64) *T {
	p := a.pages[i>>pageBits]
	if p.owner != owner {
		c := new(page[T])
		*c = *p
		c.owner = owner
		a.pages[i>>pageBits] = c
		p = c
	}
	return &p.data[i&pageMask]
}

// clone returns an array that shares every page with a. The caller must make sure neither
// side owns the shared pages any more (both take fresh owner ids).
func (a *cowArray[T]) clone() cowArray[T] {
	return cowArray[T]{pages: slices.Clone(a.pages)}
}
