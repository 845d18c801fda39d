package sdk

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// slowFilter blocks cycles whose request id is "slow" until the stream's context ends.
type slowFilter struct{ echoStage }

func (slowFilter) Filter(ctx context.Context, c *Cycle) (FilterVerdict, error) {
	if c.Request.ID == "slow" {
		<-ctx.Done()
		return FilterVerdict{}, ctx.Err()
	}
	return FilterVerdict{Kept: []int{0}, Reason: c.Request.ID}, nil
}

func TestStreamCallPastDeadlineDropsTheStream(t *testing.T) {
	c := dispense(t, StageFilter, &slowFilter{}).(*FilterClient)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.FilterBatch(ctx, []*Cycle{testCycle("slow")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: got %v, want context.DeadlineExceeded", err)
	}
	if n := len(c.filter.idle); n != 0 {
		t.Errorf("%d idle streams after a timed-out call, want 0 (its late answer would be misread)", n)
	}
	// The next call opens a fresh stream and gets its own answer, not the slow one's.
	got, err := c.FilterBatch(context.Background(), []*Cycle{testCycle("next")})
	if err != nil || got[0].Value.Reason != "next" {
		t.Fatalf("call after the timeout: got %+v, %v; want reason \"next\"", got, err)
	}
	if n := len(c.filter.idle); n != 1 {
		t.Errorf("%d idle streams after a good call, want 1", n)
	}
}

func TestStreamPoolServesConcurrentCallers(t *testing.T) {
	c := dispense(t, StageFilter, &slowFilter{}).(*FilterClient)
	const callers = maxIdleStreams + 4 // the streams beyond maxIdleStreams are closed after use
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + i))
			for range 20 {
				got, err := c.FilterBatch(context.Background(), []*Cycle{testCycle(id)})
				if err != nil || got[0].Value.Reason != id {
					errs <- errors.New("caller " + id + " got another caller's answer or an error")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(c.filter.idle); n > maxIdleStreams || n == 0 {
		t.Errorf("%d idle streams, want between 1 and %d", n, maxIdleStreams)
	}
}
