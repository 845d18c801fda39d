package workload

import "github.com/foresight-router/foresight/internal/splitmix"

// BlockSize is the number of tokens in a KV block (vLLM's default block_size).
const BlockSize = 16

// combine folds v into h. It is not commutative: combine(combine(h, a), b) and
// combine(combine(h, b), a) differ, which chaining relies on.
func combine(h, v uint64) uint64 {
	return splitmix.Mix(h ^ splitmix.Mix(v+splitmix.Gamma))
}

// Tags that keep the content identities of different kinds of token apart.
const (
	tagSystem   = 0x5359535f50524f4d // system prompt of a group
	tagQuestion = 0x5155455354494f4e // a user's question (session, turn)
	tagAnswer   = 0x414e53574552535f // the model's answer (session, turn)
	tagContext  = 0x434f4e5445585453 // a production context stream
	tagTrace    = 0x5452414345524f57 // a trace row's own prompt
	tagMooncake = 0x4d4f4f4e43414b45 // a Mooncake hash_id
	tagBlock    = 0x424c4f434b5f5f5f // start of a block's content hash
)

// segment returns the identity of a token segment: the tokens of segment s are the stream
// (s, 0), (s, 1), …; two segments with different identities share no token.
func segment(salt, tag, a, b uint64) uint64 {
	return combine(combine(combine(salt, tag), a), b)
}

// run is a stretch of n consecutive tokens of one segment starting at offset off.
type run struct {
	seg    uint64
	off, n int
}

// contentHash identifies a block's exact token composition, given as maximal runs in order.
func contentHash(runs []run) uint64 {
	c := uint64(tagBlock)
	for _, r := range runs {
		c = combine(c, r.seg)
		c = combine(c, uint64(r.off)<<16|uint64(r.n))
	}
	return c
}

// wholeBlockHash is contentHash([]run{{seg, off, BlockSize}}) without the slice.
func wholeBlockHash(seg uint64, off int) uint64 {
	return combine(combine(tagBlock, seg), uint64(off)<<16|BlockSize)
}

// stream builds the chained block hashes of a token sequence made of whole segments appended one
// after another. Slices handed out by view stay valid after later appends (they are capped), so
// the turns of one conversation share one backing array when it was allocated large enough.
type stream struct {
	blocks []uint64 // chained hashes of the full blocks so far
	h      uint64   // chain value after the last full block
	pend   []run    // tokens of the partial block, as runs
	ptok   int      // tokens in the partial block
	tokens int      // tokens appended so far
}

// newStream starts an empty sequence whose chain begins at root, with room for capBlocks blocks.
func newStream(root uint64, capBlocks int) *stream {
	return &stream{blocks: make([]uint64, 0, max(capBlocks, 0)), h: root}
}

// fork copies s into a new stream with room for capBlocks blocks.
func (s *stream) fork(capBlocks int) *stream {
	n := &stream{
		blocks: make([]uint64, len(s.blocks), max(capBlocks, len(s.blocks))),
		h:      s.h,
		pend:   append([]run(nil), s.pend...),
		ptok:   s.ptok,
		tokens: s.tokens,
	}
	copy(n.blocks, s.blocks)
	return n
}

// tail returns a stream that continues s (same chain value and partial block) without its full
// blocks, with room for capBlocks new ones: for output blocks that are not kept in s.
func (s *stream) tail(capBlocks int) *stream {
	return &stream{
		blocks: make([]uint64, 0, max(capBlocks, 0)),
		h:      s.h,
		pend:   append([]run(nil), s.pend...),
		ptok:   s.ptok,
		tokens: s.tokens,
	}
}

func (s *stream) emit(content uint64) {
	s.h = combine(s.h, content)
	s.blocks = append(s.blocks, s.h)
}

// appendSegment appends the first n tokens of segment seg.
func (s *stream) appendSegment(seg uint64, n int) {
	if n <= 0 {
		return
	}
	s.tokens += n
	off := 0
	if s.ptok > 0 {
		k := min(BlockSize-s.ptok, n)
		s.pend = append(s.pend, run{seg, 0, k})
		s.ptok += k
		off = k
		if s.ptok == BlockSize {
			s.emit(contentHash(s.pend))
			s.pend, s.ptok = s.pend[:0], 0
		}
	}
	for ; off+BlockSize <= n; off += BlockSize {
		s.emit(wholeBlockHash(seg, off))
	}
	if off < n {
		s.pend = append(s.pend, run{seg, off, n - off})
		s.ptok = n - off
	}
}

// view returns blocks [from, to) as a read-only, capacity-capped slice (nil when empty).
func (s *stream) view(from, to int) []uint64 {
	if to <= from {
		return nil
	}
	return s.blocks[from:to:to]
}
