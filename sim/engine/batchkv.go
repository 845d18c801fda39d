package engine

import "github.com/foresight-router/foresight/internal/splitmix"

// How the batch engine's requests use its KV cache (kvcache.go): prefix lookups, block
// allocation, registration for prefix caching and release.

// findHits returns the cached blocks of r's longest cached prefix. Like vLLM it never hits the
// last token (its logits must be computed), so at most ⌊(numTokens−1)/BlockSize⌋ blocks.
func (e *Batch) findHits(r *reqState) []int32 {
	bs := e.cfg.BlockSize
	e.hitBuf = e.hitBuf[:0]
	for j := range (r.numTokens - 1) / bs {
		b := e.kv.lookup(r.hashAt(j, bs))
		if b == nilBlock {
			break
		}
		e.hitBuf = append(e.hitBuf, b)
	}
	return e.hitBuf
}

// allocate gives r the blocks to hold computed+n tokens, taking the prefix-hit blocks hits
// first (vLLM's KVCacheManager.allocate_slots). It fails, changing nothing, when the free
// queue cannot supply the new blocks plus the hit blocks it would lose. Blocks that the
// scheduled tokens fill are registered for prefix caching right away, as vLLM does at
// scheduling time, so a request admitted later in the same step can already hit them.
func (e *Batch) allocate(r *reqState, hits []int32, n int) bool {
	tokens := r.computed + n
	if !e.allocateBlocks(r, hits, tokens) {
		return false
	}
	e.cacheBlocks(r, min(tokens, r.numTokens))
	return true
}

// allocateBlocks gives r the blocks to hold tokens tokens, hits first, registering none but the
// hits (which are registered already); it fails, changing nothing, as allocate does.
func (e *Batch) allocateBlocks(r *reqState, hits []int32, tokens int) bool {
	bs := e.cfg.BlockSize
	need := ceilDiv(tokens, bs) - len(r.blocks) - len(hits)
	evictable := 0
	for _, b := range hits {
		if e.kv.get(b).free {
			evictable++
		}
	}
	if int32(need+evictable) > e.kv.numFree {
		return false
	}
	for _, b := range hits {
		e.kv.touch(b)
		r.blocks = append(r.blocks, b)
	}
	r.numCached += len(hits)
	for range need {
		r.blocks = append(r.blocks, e.kv.allocate())
	}
	return true
}

// cacheBlocks registers r's full blocks within its first tokens tokens for prefix caching,
// logging the hashes that become findable when the cache-event log is on.
func (e *Batch) cacheBlocks(r *reqState, tokens int) {
	bs := e.cfg.BlockSize
	full := tokens / bs
	for j := r.numCached; j < full; j++ {
		h := r.hashAt(j, bs)
		if e.kv.register(r.blocks[j], h) && e.kv.rec {
			e.kv.stored(r.id, j, h, r.hashAt(max(j-1, 0), bs))
		}
	}
	r.numCached = max(r.numCached, full)
}

// free releases r's blocks last to first, so that a request's tail blocks are evicted before its
// head blocks, which other requests are likelier to share (vLLM frees in reverse order).
func (e *Batch) free(r *reqState) {
	for j := len(r.blocks) - 1; j >= 0; j-- {
		e.kv.release(r.blocks[j])
	}
	r.blocks = nil
}

// hashAt is the hash of r's block j: the caller's prompt hash, then its output hash, else a hash
// unique to the request.
func (r *reqState) hashAt(j, bs int) uint64 {
	if j < len(r.prompt) {
		return r.prompt[j]
	}
	if k := j - r.input/bs; k >= 0 && k < len(r.outBlocks) {
		return r.outBlocks[k]
	}
	return splitmix.Mix(splitmix.Mix(r.id^0x5eed) + uint64(j))
}
