package pipeline

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// coalescer shares round trips to one stage: while a call is in flight, the cycles that arrive
// queue up and go out together in the next call (at most maxBatch of them). There is no timer, so
// at low load every cycle is sent at once, alone. One long-lived goroutine sends the calls: a
// goroutine started per call would grow its stack through the encoder every time (copying it
// cost ~6 % of the host's CPU at concurrency 1).
type coalescer[Req, Res any] struct {
	call     func(ctx context.Context, reqs []Req) ([]transport.Result[Res], error)
	maxBatch int

	mu    sync.Mutex
	busy  bool // the sender has work: queued or in flight
	queue []*pending[Req, Res]

	wake     chan struct{} // tells the sender there is work; holds at most one signal
	quit     chan struct{} // closed by stop
	start    sync.Once
	stopOnce sync.Once

	batches atomic.Int64 // calls sent
	sentAt  atomic.Int64 // when the call in flight was sent, in Unix ns; 0 while none is
}

// errClosed answers calls made after the pipeline was closed.
var errClosed = errors.New("the pipeline is closed")

type pending[Req, Res any] struct {
	req Req
	// group, on the first request of a doMany call, is how many requests the call queued: they
	// go out in one batch when they fit in one.
	group    int
	deadline time.Time
	done     chan struct{}
	res      transport.Result[Res]
}

func newCoalescer[Req, Res any](maxBatch int, call func(context.Context, []Req) ([]transport.Result[Res], error)) *coalescer[Req, Res] {
	return &coalescer[Req, Res]{call: call, maxBatch: maxBatch, wake: make(chan struct{}, 1), quit: make(chan struct{})}
}

// batchCount returns how many calls the sender has made.
func (c *coalescer[Req, Res]) batchCount() int64 { return c.batches.Load() }

// stop ends the sender; later calls fail with errClosed.
func (c *coalescer[Req, Res]) stop() { c.stopOnce.Do(func() { close(c.quit) }) }

// work is the sender: it sends whatever is queued each time it is woken.
func (c *coalescer[Req, Res]) work() {
	for {
		select {
		case <-c.wake:
			c.gather()
		case <-c.quit:
			return
		}
	}
}

// doMany queues reqs together, so they travel in the same call unless there are more than
// maxBatch of them (a round's members must: see round.go), and waits for each answer or for that
// request's ctx to end.
func (c *coalescer[Req, Res]) doMany(ctxs []context.Context, reqs []Req) []transport.Result[Res] {
	ps := make([]*pending[Req, Res], len(reqs))
	for i, req := range reqs {
		ps[i] = &pending[Req, Res]{req: req, done: make(chan struct{})}
		ps[i].deadline, _ = ctxs[i].Deadline()
	}
	if len(ps) > 0 {
		ps[0].group = len(ps)
	}
	out := make([]transport.Result[Res], len(ps))
	select {
	case <-c.quit:
		for i := range out {
			out[i].Err = errClosed
		}
		return out
	default:
	}
	c.mu.Lock()
	c.queue = append(c.queue, ps...)
	if !c.busy {
		c.busy = true
		c.start.Do(func() { go c.work() })
		c.wake <- struct{}{} // never blocks: busy admits one signal at a time
	}
	c.mu.Unlock()
	for i, p := range ps {
		select {
		case <-p.done:
			out[i] = p.res
		case <-ctxs[i].Done():
			out[i].Err = ctxs[i].Err()
		}
	}
	return out
}

// take removes up to maxBatch live requests from the queue, leaving for the next batch a
// doMany call's requests that fit in one batch but not in what is left of this one; the caller
// holds mu.
func (c *coalescer[Req, Res]) take() []*pending[Req, Res] {
	now := time.Now()
	var batch []*pending[Req, Res]
	n := 0
	for n < len(c.queue) && len(batch) < c.maxBatch {
		p := c.queue[n]
		if len(batch) > 0 && p.group <= c.maxBatch && len(batch)+p.group > c.maxBatch {
			break
		}
		n++
		if !p.deadline.IsZero() && now.After(p.deadline) {
			continue // its caller has given up already
		}
		batch = append(batch, p)
	}
	c.queue = append(c.queue[:0], c.queue[n:]...)
	return batch
}

// gather lets goroutines that are already runnable (typically another cohort reaching the same
// stage) join the queue before it is taken. It yields once; no timer.
func (c *coalescer[Req, Res]) gather() {
	runtime.Gosched()
	c.mu.Lock()
	batch := c.take()
	c.mu.Unlock()
	c.run(batch)
}

// run sends batches until the queue is empty.
func (c *coalescer[Req, Res]) run(batch []*pending[Req, Res]) {
	for {
		if len(batch) > 0 {
			c.send(batch)
		}
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		batch = c.take()
		c.mu.Unlock()
	}
}

func (c *coalescer[Req, Res]) send(batch []*pending[Req, Res]) {
	c.batches.Add(1)
	reqs := make([]Req, len(batch))
	var deadline time.Time
	for i, p := range batch {
		reqs[i] = p.req
		if p.deadline.After(deadline) {
			deadline = p.deadline
		}
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if !deadline.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, deadline)
	}
	c.sentAt.Store(time.Now().UnixNano())
	results, err := c.call(ctx, reqs)
	c.sentAt.Store(0)
	cancel()
	for i, p := range batch {
		switch {
		case err != nil:
			p.res.Err = err
		case i < len(results):
			p.res = results[i]
		default:
			p.res.Err = errShortBatch
		}
		close(p.done)
	}
}
