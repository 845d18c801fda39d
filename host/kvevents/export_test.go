package kvevents

// loseNext makes the next n batches published go unsent, though numbered and kept for replay,
// as if the network had dropped them.
func (p *Publisher) loseNext(n int) {
	p.mu.Lock()
	p.lose += n
	p.mu.Unlock()
}
