package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// A slot's deadline fits the host it runs on. The slot keeps the latencies of its last
// deadlineWindow round trips (those that answered, and those that missed their deadline, counted
// at the time they took: at least the deadline, so a stage slower than its deadline raises it
// rather than missing it unmeasured) and sets its deadline to twice their p99, never below
// pipeline.stageTimeout nor above pipeline.stageTimeoutMax. Twice, because a cycle that reaches a
// busy stage waits for the round trip in flight before its own goes out: two round trips is what
// it takes when both are slow. Each call's deadline is then bounded by a share of its request's
// TTFT objective (pipeline.stageTimeoutSLOShare): a decision that eats the objective is worth
// less than the fallback's. A plugin's own timeout is a fixed deadline that none of this moves.
const (
	// deadlineWindow is how many round trips the p99 is taken over: on a busy host, a few
	// seconds' worth; at 64 values the p99 sits between the largest two.
	deadlineWindow = 64
	// deadlineMinSamples is how many round trips a slot measures before it adapts: a p99 of
	// fewer says little, so until then the deadline is stageTimeout.
	deadlineMinSamples = 8
	// deadlineFactor multiplies the p99 (see above).
	deadlineFactor = 2
	// deadlineEvery is how many round trips pass between two recomputations of the quantiles.
	deadlineEvery = 8
)

// stageDeadline is one slot's deadline, adapted to its measured round trips. Safe for
// concurrent use.
type stageDeadline struct {
	fixed          bool // a plugin's own timeout: floor is the deadline, whatever was measured
	floor, ceiling time.Duration
	sloShare       float64

	mu      sync.Mutex
	window  [deadlineWindow]time.Duration // ring of the last round trips
	n, next int                           // values held; where the next goes
	since   int                           // round trips since the last recomputation

	current atomic.Int64 // the deadline before a request's bound, in ns
	median  atomic.Int64 // the median round trip, in ns; 0 before deadlineMinSamples
}

// newStageDeadline returns the deadline of a slot serving a plugin whose own timeout is own
// (0: none) in pipeline pc.
func newStageDeadline(pc *config.Pipeline, own time.Duration) *stageDeadline {
	d := &stageDeadline{floor: pc.StageTimeout, ceiling: max(pc.StageTimeoutMax, pc.StageTimeout), sloShare: pc.StageTimeoutSLOShare}
	if own > 0 {
		d.fixed, d.floor, d.ceiling = true, own, own
	}
	d.current.Store(int64(d.floor))
	return d
}

// observe records the latency of one successful round trip.
func (d *stageDeadline) observe(rtt time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.window[d.next] = rtt
	d.next = (d.next + 1) % deadlineWindow
	d.n = min(d.n+1, deadlineWindow)
	d.since++
	if d.n < deadlineMinSamples || (d.since < deadlineEvery && d.n > deadlineMinSamples) {
		return
	}
	d.since = 0
	ms := make([]float64, d.n)
	for i, v := range d.window[:d.n] {
		ms[i] = float64(v)
	}
	slices.Sort(ms)
	d.median.Store(int64(quantile.Sorted(ms, 0.5)))
	if !d.fixed {
		p99 := time.Duration(quantile.Sorted(ms, 0.99))
		d.current.Store(int64(min(max(deadlineFactor*p99, d.floor), d.ceiling)))
	}
}

// now returns the slot's deadline before any request's bound.
func (d *stageDeadline) now() time.Duration { return time.Duration(d.current.Load()) }

// typical returns the median of the measured round trips; 0 until enough were measured.
func (d *stageDeadline) typical() time.Duration { return time.Duration(d.median.Load()) }

// forRequest returns the deadline of a call for r: the slot's, bounded by r's TTFT objective's
// share (a fixed deadline is not).
func (d *stageDeadline) forRequest(r *sdk.Request) time.Duration {
	t := d.now()
	if !d.fixed && r != nil && r.SLO.TTFTMs > 0 {
		t = min(t, time.Duration(d.sloShare*r.SLO.TTFTMs*float64(time.Millisecond)))
	}
	return t
}

// missError is a call the host did not send: the round trips queued ahead of it would make it
// answer past its deadline, so its fallback applies at once rather than after the wait.
type missError struct {
	ahead              int           // round trips before its own
	expected, deadline time.Duration // when it would have answered; its deadline
}

func (e *missError) Error() string {
	return fmt.Sprintf("not sent: %d round trips ahead, expected to answer in %v, past its %v deadline",
		e.ahead, e.expected.Round(time.Microsecond), e.deadline.Round(time.Microsecond))
}

// withDeadlines gives each member's call its deadline under the member's context, and returns,
// per member, a missError where the backlog on co would make the call miss it (nil: send it);
// cancel releases the contexts.
func withDeadlines[Req, Res any](s *slot, co *coalescer[Req, Res], ms []*member) (ctxs []context.Context, miss []error, cancel func()) {
	ctxs, miss = make([]context.Context, len(ms)), make([]error, len(ms))
	cancels := make([]context.CancelFunc, len(ms))
	ahead, expected := 0, time.Duration(0)
	if !s.inProcess {
		ahead, expected = co.expectedWait(s.deadline.typical())
	}
	for i, m := range ms {
		dl := s.deadline.forRequest(m.request())
		if ahead > 0 && expected > dl {
			miss[i] = &missError{ahead: ahead, expected: expected, deadline: dl}
		}
		ctxs[i], cancels[i] = context.WithTimeout(m.ctx, dl)
	}
	return ctxs, miss, func() {
		for _, c := range cancels {
			c()
		}
	}
}

// expectedWait returns how many round trips are ahead of a call queued now (the one in flight,
// and every full batch queued) and when that call would answer, all at the typical round trip
// rtt: what is left of the one in flight, the full batches, then its own. 0, 0 without a
// backlog or before rtt is known.
func (c *coalescer[Req, Res]) expectedWait(rtt time.Duration) (int, time.Duration) {
	if rtt <= 0 {
		return 0, 0
	}
	c.mu.Lock()
	full := len(c.queue) / c.maxBatch // a partial batch is joined, not waited for
	c.mu.Unlock()
	ahead, wait := full, time.Duration(full+1)*rtt
	if since := c.sentAt.Load(); since != 0 {
		ahead++
		wait += max(rtt-time.Since(time.Unix(0, since)), 0)
	}
	if ahead == 0 {
		return 0, 0
	}
	return ahead, wait
}

// request returns the request m schedules (a shadow's member has only the cycle it sends).
func (m *member) request() *sdk.Request {
	if m.in != nil {
		return &m.in.Request
	}
	if m.cur != nil {
		return &m.cur.Request
	}
	return nil
}
