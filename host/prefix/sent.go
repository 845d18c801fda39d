package prefix

// Sent is a prompt that Send recorded on an endpoint, with where its blocks sit in the endpoint's
// record, so that Finish moves them without looking each one up again.
type Sent struct {
	x        *Index
	endpoint string
	l        *lru     // the record Send wrote to; nil for a prompt without blocks
	blocks   []uint64 // the prompt's hashes, first block first
	at       []int32  // at[i]: where blocks[i] sat in l when Send returned
}

// Send records that endpoint received a prompt with these chained block hashes, exactly as Record
// does, and returns it for Finish. blocks must not be modified while the Sent is in use. Unlike
// Record it allocates: 4 bytes a block for where they sit.
func (x *Index) Send(endpoint string, blocks []uint64) *Sent {
	s := &Sent{x: x, endpoint: endpoint, blocks: blocks}
	if len(blocks) == 0 {
		return s
	}
	s.l, s.at = x.endpoint(endpoint), make([]int32, len(blocks))
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	for i := len(blocks) - 1; i >= 0; i-- {
		s.at[i] = s.l.touch(blocks[i])
	}
	s.l.evict()
	return s
}

// Finish records that the endpoint finished the prompt with an answer whose full blocks continue
// the prompt's chain with these hashes (none when the answer did not complete a block): the engine
// caches both, and frees them now, which makes them its most recently used. The record ends as
// Record(endpoint, prompt's blocks followed by answer's) leaves it, and evicts as it would; but
// only the answer's blocks are looked up. The prompt's are moved from where Send left them, but
// for any evicted since (or all of them, if Retain forgot the endpoint meanwhile), which are
// looked up and inserted again as Record would.
func (s *Sent) Finish(answer []uint64) {
	if len(s.blocks)+len(answer) == 0 {
		return
	}
	l := s.x.endpoint(s.endpoint)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(answer) - 1; i >= 0; i-- {
		l.touch(answer[i])
	}
	same := l == s.l
	for i := len(s.blocks) - 1; i >= 0; i-- {
		if same && l.holds(s.at[i], s.blocks[i]) {
			l.front(s.at[i])
		} else {
			l.touch(s.blocks[i])
		}
	}
	l.evict()
}
