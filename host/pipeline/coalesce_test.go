package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// fakeBatch is a fake batch call: it records every batch on calls, then waits until hold is closed
// before answering each request r with 10·r, or with an error for the requests in fail.
type fakeBatch struct {
	calls     chan []int
	deadlines chan time.Time // the deadline of each call's context (zero: none)
	hold      chan struct{}
	err       error        // returned for the whole call when set
	fail      map[int]bool // requests answered with their own error
}

func newFakeBatch() *fakeBatch {
	return &fakeBatch{calls: make(chan []int, 64), deadlines: make(chan time.Time, 64), hold: make(chan struct{})}
}

func (s *fakeBatch) call(ctx context.Context, reqs []int) ([]transport.Result[int], error) {
	s.calls <- slices.Clone(reqs)
	d, _ := ctx.Deadline()
	s.deadlines <- d
	<-s.hold
	if s.err != nil {
		return nil, s.err
	}
	out := make([]transport.Result[int], len(reqs))
	for i, r := range reqs {
		if s.fail[r] {
			out[i].Err = fmt.Errorf("request %d failed", r)
			continue
		}
		out[i].Value = 10 * r
	}
	return out, nil
}

// doAnswer is what one do call returned.
type doAnswer struct {
	req, res int
	err      error
}

// startDo calls co.do(ctx, req) in a goroutine and returns where its answer will arrive.
func startDo(ctx context.Context, co *coalescer[int, int], req int) <-chan doAnswer {
	ch := make(chan doAnswer, 1)
	go func() {
		res, err := co.do(ctx, req)
		ch <- doAnswer{req, res, err}
	}()
	return ch
}

// waitQueued polls until n requests wait in co's queue. It only lets goroutines reach the queue;
// nothing is asserted about how long that takes.
func waitQueued(t *testing.T, co *coalescer[int, int], n int) {
	t.Helper()
	for give := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		co.mu.Lock()
		got := len(co.queue)
		co.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(give) {
			t.Fatalf("queue holds %d requests, want %d", got, n)
		}
	}
}

// recvOrFail returns the next value of ch, failing the test if none comes in a generous while.
func recvOrFail[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived")
		panic("unreachable")
	}
}

func TestCoalescerAloneSendsBatchOfOne(t *testing.T) {
	s := newFakeBatch()
	close(s.hold)
	co := newCoalescer(16, s.call)
	for _, req := range []int{7, 8} { // one after the other: never concurrent
		res, err := co.do(context.Background(), req)
		if err != nil || res != 10*req {
			t.Fatalf("do(%d) = %d, %v; want %d, nil", req, res, err, 10*req)
		}
		if got := recvOrFail(t, s.calls); !slices.Equal(got, []int{req}) {
			t.Errorf("batch = %v, want [%d]", got, req)
		}
	}
	if n := co.batches.Load(); n != 2 {
		t.Errorf("batches = %d, want 2", n)
	}
}

func TestCoalescerQueuesWhileBusy(t *testing.T) {
	tests := []struct {
		name     string
		maxBatch int
		queued   int
		want     [][]int // the batches after the first call [0]
	}{
		{"5 queued, maxBatch 3: 3 then 2", 3, 5, [][]int{{1, 2, 3}, {4, 5}}},
		{"5 queued, maxBatch 16: all in one", 16, 5, [][]int{{1, 2, 3, 4, 5}}},
		{"4 queued, maxBatch 1: one each", 1, 4, [][]int{{1}, {2}, {3}, {4}}},
		{"6 queued, maxBatch 3: 3 then 3", 3, 6, [][]int{{1, 2, 3}, {4, 5, 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFakeBatch()
			co := newCoalescer(tt.maxBatch, s.call)
			answers := []<-chan doAnswer{startDo(context.Background(), co, 0)}
			if got := recvOrFail(t, s.calls); !slices.Equal(got, []int{0}) {
				t.Fatalf("first batch = %v, want [0]", got)
			}
			// The first call is held; the next callers queue in a known order.
			for req := 1; req <= tt.queued; req++ {
				answers = append(answers, startDo(context.Background(), co, req))
				waitQueued(t, co, req)
			}
			close(s.hold)
			for _, want := range tt.want {
				if got := recvOrFail(t, s.calls); !slices.Equal(got, want) {
					t.Errorf("batch = %v, want %v", got, want)
				}
			}
			for req, ch := range answers {
				if a := recvOrFail(t, ch); a.err != nil || a.res != 10*req {
					t.Errorf("do(%d) = %d, %v; want %d, nil", req, a.res, a.err, 10*req)
				}
			}
			if n, want := co.batches.Load(), int64(1+len(tt.want)); n != want {
				t.Errorf("batches = %d, want %d", n, want)
			}
		})
	}
}

func TestCoalescerResultsReachTheirCallers(t *testing.T) {
	s := newFakeBatch()
	s.fail = map[int]bool{2: true, 4: true}
	co := newCoalescer(16, s.call)
	answers := []<-chan doAnswer{startDo(context.Background(), co, 0)}
	recvOrFail(t, s.calls)
	for req := 1; req <= 5; req++ {
		answers = append(answers, startDo(context.Background(), co, req))
		waitQueued(t, co, req)
	}
	close(s.hold)
	for req, ch := range answers {
		a := recvOrFail(t, ch)
		switch {
		case s.fail[req]:
			if want := fmt.Sprintf("request %d failed", req); a.err == nil || a.err.Error() != want {
				t.Errorf("do(%d) error = %v, want %q", req, a.err, want)
			}
		case a.err != nil || a.res != 10*req:
			t.Errorf("do(%d) = %d, %v; want %d, nil", req, a.res, a.err, 10*req)
		}
	}
}

func TestCoalescerTransportErrorReachesEveryMember(t *testing.T) {
	s := newFakeBatch()
	s.err = errors.New("transport: connection reset")
	co := newCoalescer(16, s.call)
	answers := []<-chan doAnswer{startDo(context.Background(), co, 0)}
	recvOrFail(t, s.calls)
	for req := 1; req <= 3; req++ {
		answers = append(answers, startDo(context.Background(), co, req))
		waitQueued(t, co, req)
	}
	close(s.hold)
	if got := recvOrFail(t, s.calls); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("second batch = %v, want [1 2 3]", got)
	}
	for req, ch := range answers {
		if a := recvOrFail(t, ch); !errors.Is(a.err, s.err) || a.res != 0 {
			t.Errorf("do(%d) = %d, %v; want 0, %v", req, a.res, a.err, s.err)
		}
	}
}

func TestCoalescerDeadlineWhileQueued(t *testing.T) {
	s := newFakeBatch()
	co := newCoalescer(16, s.call)
	first := startDo(context.Background(), co, 0)
	recvOrFail(t, s.calls)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	expired := startDo(ctx, co, 1)
	waitQueued(t, co, 1)
	if a := recvOrFail(t, expired); !errors.Is(a.err, context.DeadlineExceeded) {
		t.Fatalf("do(1) = %d, %v; want context.DeadlineExceeded", a.res, a.err)
	}
	live := startDo(context.Background(), co, 2)
	waitQueued(t, co, 2) // 1 is still in the queue, given up
	close(s.hold)

	if got := recvOrFail(t, s.calls); !slices.Equal(got, []int{2}) {
		t.Errorf("second batch = %v, want [2]: the expired request must not be sent", got)
	}
	for _, ch := range []<-chan doAnswer{first, live} {
		if a := recvOrFail(t, ch); a.err != nil || a.res != 10*a.req {
			t.Errorf("do(%d) = %d, %v; want %d, nil", a.req, a.res, a.err, 10*a.req)
		}
	}
	if n := co.batches.Load(); n != 2 {
		t.Errorf("batches = %d, want 2", n)
	}
}

func TestCoalescerDeadlineWhileInFlight(t *testing.T) {
	deadlines := make(chan time.Time, 1)
	co := newCoalescer(16, func(ctx context.Context, _ []int) ([]transport.Result[int], error) {
		d, _ := ctx.Deadline()
		deadlines <- d
		<-ctx.Done() // a stage that honours its context
		return nil, ctx.Err()
	})
	// Long enough that the request is still live when the coalescer takes it, even on a loaded
	// machine (an expired request is never sent); the call then outlives it.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	want, _ := ctx.Deadline()
	if res, err := co.do(ctx, 0); !errors.Is(err, context.DeadlineExceeded) || res != 0 {
		t.Errorf("do(0) = %d, %v; want 0, context.DeadlineExceeded", res, err)
	}
	if got := recvOrFail(t, deadlines); !got.Equal(want) {
		t.Errorf("call deadline = %v, want the caller's %v", got, want)
	}
}

// do promises to wait "for its answer or for ctx to end", even when the stage (an in-process
// Spec.Local stage busy computing, say) ignores its context: the call runs in its own goroutine so
// the caller, and Run, return at the deadline.
func TestCoalescerDeadlineWhileInFlightStageIgnoresContext(t *testing.T) {
	s := newFakeBatch()
	released := false
	t.Cleanup(func() {
		if !released {
			close(s.hold)
		}
	})
	co := newCoalescer(16, s.call)
	// Long enough that the request is still live when the coalescer takes it, even on a loaded
	// machine (an expired request is never sent); the call then outlives it.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ch := startDo(ctx, co, 0)
	recvOrFail(t, s.calls)
	// The stage ignores its context and is still held, yet the caller gives up at its deadline.
	if a := recvOrFail(t, ch); !errors.Is(a.err, context.DeadlineExceeded) || a.res != 0 {
		t.Errorf("do(0) = %d, %v; want 0, context.DeadlineExceeded", a.res, a.err)
	}
	close(s.hold) // the late answer has nobody to go to; it must not block the coalescer
	released = true
	next := startDo(context.Background(), co, 1)
	if a := recvOrFail(t, next); a.err != nil || a.res != 10 {
		t.Errorf("do(1) after a late answer = %d, %v; want 10, nil", a.res, a.err)
	}
}

func TestCoalescerBatchDeadlineIsTheLatest(t *testing.T) {
	s := newFakeBatch()
	co := newCoalescer(16, s.call)
	first := startDo(context.Background(), co, 0)
	recvOrFail(t, s.calls)
	if d := recvOrFail(t, s.deadlines); !d.IsZero() {
		t.Errorf("deadline of a call without one = %v, want none", d)
	}
	base := time.Now()
	var latest time.Time
	var answers []<-chan doAnswer
	for req, after := range []time.Duration{time.Hour, 3 * time.Hour, 2 * time.Hour} {
		ctx, cancel := context.WithDeadline(context.Background(), base.Add(after))
		defer cancel()
		if d, _ := ctx.Deadline(); d.After(latest) {
			latest = d
		}
		answers = append(answers, startDo(ctx, co, req+1))
		waitQueued(t, co, req+1)
	}
	close(s.hold)
	recvOrFail(t, s.calls)
	// Members wait 1h, 3h and 2h: the shared call may run until the latest, 3h.
	if got := recvOrFail(t, s.deadlines); !got.Equal(latest) {
		t.Errorf("batch deadline = %v, want the latest member's %v", got, latest)
	}
	for _, ch := range append(answers, first) {
		if a := recvOrFail(t, ch); a.err != nil {
			t.Errorf("do(%d): %v", a.req, a.err)
		}
	}
}

// A batch call that answers fewer results than it was given requests leaves the missing
// members with a zero value and a nil error: a filter's zero verdict would then keep nothing.
func TestCoalescerShortAnswerIsAnError(t *testing.T) {
	co := newCoalescer(16, func(_ context.Context, reqs []int) ([]transport.Result[int], error) {
		return nil, nil // no result for anyone
	})
	if res, err := co.do(context.Background(), 1); err == nil {
		t.Errorf("do(1) = %d, nil; want an error for the missing result", res)
	}
}

// do sends one req through doMany (the single-request form the tests use) and waits for its answer or for ctx to end. A
// transport failure of the shared call is every member's error.
func (c *coalescer[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	r := c.doMany([]context.Context{ctx}, []Req{req})[0]
	return r.Value, r.Err
}

// TestCoalescerStop: after stop, the sender has gone and calls fail at once with errClosed.
func TestCoalescerStop(t *testing.T) {
	s := newFakeBatch()
	close(s.hold)
	co := newCoalescer(16, s.call)
	if res, err := co.do(context.Background(), 1); err != nil || res != 10 {
		t.Fatalf("before stop: %d, %v", res, err)
	}
	recvOrFail(t, s.calls)
	co.stop()
	co.stop() // idempotent
	if _, err := co.do(context.Background(), 2); !errors.Is(err, errClosed) {
		t.Errorf("after stop: %v, want errClosed", err)
	}
}
