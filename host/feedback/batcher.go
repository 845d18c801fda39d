// Package feedback batches requests' samples (TTFT at first token, TPOT at the end) on their way
// to the producer: the host sends them through Observe at least every MaxDelay, or as soon as
// MaxBatch are waiting, so the learner sees fresh latencies without a call per request. Time
// comes from the caller, so the same batcher serves the live router (wall clock) and the
// simulator (virtual time).
package feedback

import (
	"context"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Defaults of a batcher's limits. 100 ms keeps a young producer close behind the traffic (its
// prior predicts from 16 samples; a 1 s delay left the first second of a busy fleet to the
// fallbacks) for at most ten Observe calls a second.
const (
	DefaultMaxBatch = 256
	DefaultMaxDelay = 100 * time.Millisecond
)

// SendFunc delivers a batch to the producer.
type SendFunc func(ctx context.Context, samples []sdk.Sample) (sdk.ObserveResult, error)

// Counts describe what a batcher has done.
type Counts struct {
	// Sent samples reached the producer, which accepted Accepted of them; Failed samples were
	// in batches whose call failed (they are not retried: a stale sample is worth little, and a
	// producer that is down must not make the router hoard them).
	Sent, Accepted, Failed uint64
	Batches                uint64
	// Stats is the producer's quality report from the last successful call; nil before one.
	Stats *sdk.PredictorStats
}

// Batcher is safe for concurrent use.
type Batcher struct {
	send     SendFunc
	maxBatch int
	maxDelay time.Duration
	tap      func(sdk.Sample, time.Time) // nil: no tap

	mu      sync.Mutex
	pending []sdk.Sample
	since   time.Time // when the oldest pending sample was added
	counts  Counts
	sending sync.Mutex // one call at a time, in order
	// wake tells Run that the queue went from empty to holding a sample, so that Run sleeps
	// without a ticker while nothing waits.
	wake chan struct{}
}

// New returns a batcher that delivers through send, at most maxBatch samples per call and at
// least every maxDelay (non-positive values take the defaults).
func New(send SendFunc, maxBatch int, maxDelay time.Duration) *Batcher {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	return &Batcher{send: send, maxBatch: maxBatch, maxDelay: maxDelay, wake: make(chan struct{}, 1)}
}

// Tap makes Add pass every sample, and the time it was observed, to f before queuing it (the
// admin dashboard keeps the recent ones). f must be quick and safe for concurrent use; set the
// tap before the first Add.
func (b *Batcher) Tap(f func(sdk.Sample, time.Time)) { b.tap = f }

// Add queues s, observed at now, and delivers the queue (in the caller's goroutine) when it is
// full or its oldest sample has waited maxDelay.
func (b *Batcher) Add(ctx context.Context, s sdk.Sample, now time.Time) {
	if b.tap != nil {
		b.tap(s, now)
	}
	b.mu.Lock()
	first := len(b.pending) == 0
	if first {
		b.since = now
	}
	b.pending = append(b.pending, s)
	due := len(b.pending) >= b.maxBatch || now.Sub(b.since) >= b.maxDelay
	b.mu.Unlock()
	if due {
		b.Flush(ctx)
	} else if first {
		select {
		case b.wake <- struct{}{}:
		default: // Run has been told already
		}
	}
}

// Tick delivers the queue if its oldest sample has waited maxDelay at now; the live router calls
// it from a ticker so a quiet period does not hold samples back.
func (b *Batcher) Tick(ctx context.Context, now time.Time) {
	b.mu.Lock()
	due := len(b.pending) > 0 && now.Sub(b.since) >= b.maxDelay
	b.mu.Unlock()
	if due {
		b.Flush(ctx)
	}
}

// Run delivers the queue when its oldest sample has waited maxDelay of wall-clock time (the
// live router's samples are dated by the wall clock), until ctx ends; then it flushes what is
// left. While nothing waits it sleeps: no ticker wakes an idle router.
func (b *Batcher) Run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	arm := func() { // the timer for the oldest pending sample's deadline, if one waits
		b.mu.Lock()
		n, since := len(b.pending), b.since
		b.mu.Unlock()
		if n > 0 {
			t.Reset(time.Until(since.Add(b.maxDelay)))
		}
	}
	for {
		select {
		case <-ctx.Done():
			b.Flush(context.WithoutCancel(ctx))
			return
		case <-b.wake:
			arm()
		case now := <-t.C:
			b.Tick(ctx, now)
			arm() // a queue refilled since the timer was set is due later
		}
	}
}

// Flush delivers every queued sample now, in batches of at most maxBatch.
func (b *Batcher) Flush(ctx context.Context) {
	b.sending.Lock()
	defer b.sending.Unlock()
	for {
		b.mu.Lock()
		n := min(len(b.pending), b.maxBatch)
		if n == 0 {
			b.mu.Unlock()
			return
		}
		batch := make([]sdk.Sample, n)
		copy(batch, b.pending)
		b.pending = append(b.pending[:0], b.pending[n:]...)
		b.mu.Unlock()

		res, err := b.send(ctx, batch)
		b.mu.Lock()
		b.counts.Batches++
		if err != nil {
			b.counts.Failed += uint64(n)
		} else {
			b.counts.Sent += uint64(n)
			b.counts.Accepted += uint64(max(res.Accepted, 0))
			if res.Stats != nil {
				st := *res.Stats
				b.counts.Stats = &st
			}
		}
		b.mu.Unlock()
	}
}

// Counts returns what the batcher has done so far.
func (b *Batcher) Counts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counts
}

// Pending returns how many samples wait.
func (b *Batcher) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}
