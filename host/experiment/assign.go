package experiment

import (
	"cmp"
	"hash/fnv"
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// AssignRequest returns r's arm: Assign keyed by its session, or by its request id when it has
// none, so that a conversation stays on one arm.
func AssignRequest(r *sdk.Request, weights []float64) int {
	return Assign(cmp.Or(r.SessionID, r.ID), weights)
}

// Assign returns the arm for key (the request's session, or its request id when there is none)
// as an index into weights. The key is hashed with FNV-1a 64, the hash's bits are mixed with the
// MurmurHash3 64-bit finalizer, and its top 53 bits are mapped to u in [0,1); the arm is the
// first whose cumulative weight exceeds u times the total weight. The same key always gets the
// same arm for the same weights, and an arm of weight 0 is never chosen.
//
// Weights should be non-negative with at least one positive; negative, NaN and infinite weights
// count as 0. When no weight is positive (or weights is empty) Assign returns 0.
//
// The hash is part of the contract: changing it would move sessions between arms.
func Assign(key string, weights []float64) int {
	total := 0.0
	last := 0
	for i, w := range weights {
		if usable(w) {
			total += w
			last = i
		}
	}
	if total <= 0 || math.IsInf(total, 0) {
		return 0
	}
	x := unit(key) * total
	cum := 0.0
	for i, w := range weights {
		if !usable(w) {
			continue
		}
		cum += w
		if x < cum {
			return i
		}
	}
	return last // only reachable through rounding in the cumulative sum
}

func usable(w float64) bool { return w > 0 && !math.IsInf(w, 0) }

// unit maps key to [0,1).
func unit(key string) float64 {
	h := fnv.New64a()
	h.Write([]byte(key)) // never fails
	return float64(mix64(h.Sum64())>>11) / (1 << 53)
}

// mix64 is the MurmurHash3 64-bit finalizer. FNV-1a alone barely changes its high bits when only
// the last bytes of a key change ("session-1", "session-2"), so without it such keys would all
// land on the same arm.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
