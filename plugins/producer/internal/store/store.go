// Package store keeps the producer's training samples: a stratified store that remembers every
// load regime it has seen, not only the current one, and a held-out set for evaluation.
//
// Samples are bucketed by the endpoint's queue at dispatch (0, 1–2, 3–5, 6–10, 11+ waiting), its
// KV-cache utilisation (5 % steps) and the prompt's prefix match (0.25 steps); each bucket is a
// FIFO of at most PerBucket samples, so a regime that is rare in recent traffic (a cold cache at
// low load, say) keeps its samples until newer ones of the same regime replace them. About one
// sample in HoldoutEvery — chosen by a hash of the request ID, so the choice is reproducible — goes
// to the held-out FIFO instead and is never trained on.
package store

import (
	"github.com/foresight-router/foresight/plugins/sdk"
)

const (
	queueBuckets  = 5
	kvBuckets     = 21 // 0, 5, …, 100 %
	prefixBuckets = 5  // 0, 0.25, …, 1
)

// Store is not safe for concurrent use; the producer serialises access.
type Store struct {
	perBucket    int
	holdoutEvery uint64
	buckets      [queueBuckets * kvBuckets * prefixBuckets]fifo
	holdout      fifo
	added        uint64 // samples added since the last MarkTrained
}

// New returns a store of perBucket samples per stratum that holds out one sample in holdoutEvery
// (0: none) in a FIFO of holdoutCap.
func New(perBucket, holdoutEvery, holdoutCap int) *Store {
	s := &Store{perBucket: perBucket, holdoutEvery: uint64(max(holdoutEvery, 0))}
	s.holdout.cap = holdoutCap
	for i := range s.buckets {
		s.buckets[i].cap = perBucket
	}
	return s
}

// Add files smp in its stratum or, for one sample in holdoutEvery, in the held-out set. It
// reports whether the sample went to training.
func (s *Store) Add(smp sdk.Sample) bool {
	if s.holdoutEvery > 0 && hash(smp.Request.ID)%s.holdoutEvery == 0 {
		s.holdout.push(smp)
		return false
	}
	s.buckets[bucket(&smp.State)].push(smp)
	s.added++
	return true
}

// Added returns how many training samples arrived since the last MarkTrained.
func (s *Store) Added() uint64 { return s.added }

// MarkTrained resets Added, after a training run took the store's samples.
func (s *Store) MarkTrained() { s.added = 0 }

// Training appends every training sample to dst, bucket by bucket and oldest first within a
// bucket: the order depends only on what was added, so training is reproducible.
func (s *Store) Training(dst []sdk.Sample) []sdk.Sample {
	for i := range s.buckets {
		dst = s.buckets[i].appendTo(dst)
	}
	return dst
}

// Holdout appends the held-out samples to dst, oldest first.
func (s *Store) Holdout(dst []sdk.Sample) []sdk.Sample { return s.holdout.appendTo(dst) }

// Len returns the number of training samples held.
func (s *Store) Len() int {
	n := 0
	for i := range s.buckets {
		n += len(s.buckets[i].buf)
	}
	return n
}

// bucket is the stratum of a state.
func bucket(st *sdk.EndpointState) int {
	var q int
	switch w := st.Waiting; {
	case w <= 0:
		q = 0
	case w <= 2:
		q = 1
	case w <= 5:
		q = 2
	case w <= 10:
		q = 3
	default:
		q = 4
	}
	kv := clampIndex(st.KVCacheUsage*20, kvBuckets)
	p := clampIndex(st.PrefixMatch*4, prefixBuckets)
	return (q*kvBuckets+kv)*prefixBuckets + p
}

func clampIndex(x float64, n int) int {
	if !(x > 0) { // also NaN
		return 0
	}
	return min(int(x), n-1)
}

// hash is FNV-1a over the ID, finished with a splitmix64 mix so that sequential IDs spread.
func hash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// fifo is a ring of at most cap samples, allocated as it fills; once full, head is the oldest.
type fifo struct {
	cap, head int
	buf       []sdk.Sample
}

func (f *fifo) push(s sdk.Sample) {
	if f.cap <= 0 {
		return
	}
	if len(f.buf) < f.cap {
		f.buf = append(f.buf, s)
		return
	}
	f.buf[f.head] = s // overwrite the oldest
	f.head = (f.head + 1) % f.cap
}

func (f *fifo) appendTo(dst []sdk.Sample) []sdk.Sample {
	if len(f.buf) < f.cap {
		return append(dst, f.buf...)
	}
	dst = append(dst, f.buf[f.head:]...)
	return append(dst, f.buf[:f.head]...)
}
