package loadgen

import "sync"

// Chooser picks the target of each request of a generator with several Options.Targets, as a
// client-side load balancer does. Pick is called once per request just before it is sent, from
// the dispatching goroutine; Done when that request has ended, from its own goroutine. Pick
// must return an index of Targets.
type Chooser interface {
	Pick() int
	Done(target int)
}

// roundRobin sends request k to target k mod n.
type roundRobin struct {
	mu   sync.Mutex
	n    int
	next int
}

// NewRoundRobin returns a Chooser that cycles over n targets, 0, 1, …, n−1, 0, …
func NewRoundRobin(n int) Chooser { return &roundRobin{n: max(n, 1)} }

// Pick returns the next target in turn.
func (c *roundRobin) Pick() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.next
	c.next = (c.next + 1) % c.n
	return t
}

// Done does nothing: round-robin ignores load.
func (*roundRobin) Done(int) {}

// leastOutstanding sends each request to the target with the fewest requests in flight from
// this client.
type leastOutstanding struct {
	mu       sync.Mutex
	inFlight []int
	next     int // where the scan for the least loaded starts: ties rotate
}

// NewLeastOutstanding returns a Chooser that picks, among n targets, the one with the fewest
// requests this client has in flight (picked and not yet Done). Ties go to the first tied
// target at or after the one following the last pick, so an idle fleet is served round-robin
// rather than all on target 0.
func NewLeastOutstanding(n int) Chooser { return &leastOutstanding{inFlight: make([]int, max(n, 1))} }

// Pick returns the least loaded target and counts the request in flight there.
func (c *leastOutstanding) Pick() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.inFlight)
	best := c.next
	for k := 1; k < n; k++ {
		if i := (c.next + k) % n; c.inFlight[i] < c.inFlight[best] {
			best = i
		}
	}
	c.inFlight[best]++
	c.next = (best + 1) % n
	return best
}

// Done counts the request sent to target as ended.
func (c *leastOutstanding) Done(target int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if target >= 0 && target < len(c.inFlight) && c.inFlight[target] > 0 {
		c.inFlight[target]--
	}
}
