package feedback

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/plugins/sdk"
)

type recorder struct {
	batches [][]string
	fail    bool
}

func (r *recorder) send(_ context.Context, s []sdk.Sample) (sdk.ObserveResult, error) {
	if r.fail {
		return sdk.ObserveResult{}, errors.New("producer down")
	}
	ids := make([]string, len(s))
	for i := range s {
		ids[i] = s[i].Request.ID
	}
	r.batches = append(r.batches, ids)
	return sdk.ObserveResult{Accepted: len(s) - 1, Stats: &sdk.PredictorStats{ModelVersion: uint64(len(r.batches))}}, nil
}

func smp(i int) sdk.Sample { return sdk.Sample{Request: sdk.Request{ID: strconv.Itoa(i)}} }

func TestBatchesBySizeAndAge(t *testing.T) {
	r := &recorder{}
	b := New(r.send, 3, time.Second)
	ctx, t0 := context.Background(), time.Unix(1000, 0)
	for i := range 7 { // two full batches of 3, one left
		b.Add(ctx, smp(i), t0)
	}
	if len(r.batches) != 2 || b.Pending() != 1 {
		t.Fatalf("after 7 samples: %v batches, %d pending", r.batches, b.Pending())
	}
	b.Tick(ctx, t0.Add(999*time.Millisecond))
	if len(r.batches) != 2 {
		t.Fatal("a sample younger than the delay was sent")
	}
	b.Tick(ctx, t0.Add(time.Second))
	if len(r.batches) != 3 || r.batches[2][0] != "6" || b.Pending() != 0 {
		t.Fatalf("after the delay: %v", r.batches)
	}
	b.Add(ctx, smp(7), t0.Add(2*time.Second))
	b.Add(ctx, smp(8), t0.Add(3*time.Second)) // the oldest waited 1 s: both go
	if len(r.batches) != 4 || len(r.batches[3]) != 2 {
		t.Fatalf("age-triggered batch: %v", r.batches)
	}
	c := b.Counts()
	if c.Sent != 9 || c.Accepted != 5 || c.Failed != 0 || c.Batches != 4 || c.Stats == nil || c.Stats.ModelVersion != 4 {
		t.Errorf("counts %+v", c)
	}
}

func TestFailedBatchesAreCountedNotKept(t *testing.T) {
	r := &recorder{fail: true}
	b := New(r.send, 2, time.Second)
	for i := range 5 {
		b.Add(context.Background(), smp(i), time.Unix(0, 0))
	}
	b.Flush(context.Background())
	if c := b.Counts(); c.Failed != 5 || c.Sent != 0 || c.Batches != 3 || c.Stats != nil || b.Pending() != 0 {
		t.Errorf("counts %+v, pending %d", c, b.Pending())
	}
}

func TestRunFlushesOnStop(t *testing.T) {
	r := &recorder{}
	b := New(r.send, 100, time.Hour)
	b.Add(context.Background(), smp(1), time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	cancel()
	<-done
	if len(r.batches) != 1 {
		t.Errorf("batches after stop: %v", r.batches)
	}
}

// TestTapSeesEverySampleAsAdded: the tap gets each sample with its time, whether or not the
// batch it joins is delivered, so a failing producer does not blind the dashboard.
func TestTapSeesEverySampleAsAdded(t *testing.T) {
	r := &recorder{fail: true}
	b := New(r.send, 2, time.Second)
	var tapped []string
	b.Tap(func(s sdk.Sample, at time.Time) {
		tapped = append(tapped, s.Request.ID+"@"+strconv.FormatInt(at.Unix(), 10))
	})
	ctx, t0 := context.Background(), time.Unix(1000, 0)
	for i := range 3 { // one failed batch of 2, one pending
		b.Add(ctx, smp(i), t0.Add(time.Duration(i)*time.Second))
	}
	if got, want := strings.Join(tapped, " "), "0@1000 1@1001 2@1002"; got != want {
		t.Errorf("tapped %q, want %q", got, want)
	}
}

// TestRunDeliversAfterMaxDelayAndSleepsOtherwise: Run delivers a lone sample once it has waited
// maxDelay, and a sample added after the queue emptied starts a new wait; between them nothing
// is sent (and no ticker runs while the queue is empty).
func TestRunDeliversAfterMaxDelayAndSleepsOtherwise(t *testing.T) {
	r := &recorder{}
	b := New(r.send, 100, 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for i := range 2 {
		b.Add(context.Background(), smp(i), time.Now())
		eventually.Wait(t, 5*time.Second, "the sample delivered by Run", func() bool { return b.Counts().Sent == uint64(i+1) })
		if b.Pending() != 0 {
			t.Fatalf("after delivery %d samples wait", b.Pending())
		}
	}
	if c := b.Counts(); c.Batches != 2 {
		t.Errorf("batches %d, want one per lone sample", c.Batches)
	}
}
