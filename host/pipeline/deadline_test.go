package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/plugins/sdk"
)

const ms = time.Millisecond

// repeat returns n copies of d.
func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// TestStageDeadlineAdapts: a stage whose round trips grow slower gets a longer deadline, twice
// their p99, never below stageTimeout (25ms) nor above stageTimeoutMax (100ms); a plugin's own
// timeout does not move; a request's TTFT objective bounds the deadline of its call.
func TestStageDeadlineAdapts(t *testing.T) {
	pc := &config.Pipeline{StageTimeout: 25 * ms, StageTimeoutMax: 100 * ms, StageTimeoutSLOShare: 0.1}
	tests := []struct {
		name     string
		own      time.Duration   // the plugin's timeout; 0: none
		rtts     []time.Duration // round trips measured, in order
		deadline time.Duration   // the slot's deadline after them
		median   time.Duration   // the typical round trip
		sloMs    float64         // a request's TTFT objective
		call     time.Duration   // that request's call deadline
	}{
		{name: "nothing measured: stageTimeout", deadline: 25 * ms, call: 25 * ms},
		// 7 < deadlineMinSamples: too few to adapt from
		{name: "too few round trips", rtts: repeat(7, 60*ms), deadline: 25 * ms, call: 25 * ms},
		// 2 × p99 of eight 2ms = 4ms, under the floor
		{name: "a fast stage keeps stageTimeout", rtts: repeat(8, 2*ms), deadline: 25 * ms, median: 2 * ms, call: 25 * ms},
		// the last 64 are 20ms: 2 × 20ms = 40ms
		{name: "slower round trips, a longer deadline", rtts: append(repeat(8, 2*ms), repeat(64, 20*ms)...),
			deadline: 40 * ms, median: 20 * ms, call: 40 * ms},
		// 2 × 80ms = 160ms, capped at 100ms
		{name: "slower still: capped at stageTimeoutMax", rtts: append(repeat(64, 20*ms), repeat(64, 80*ms)...),
			deadline: 100 * ms, median: 80 * ms, call: 100 * ms},
		// 62 round trips of 10ms and two of 90ms: the p99 sits at rank 0.99·63 = 62.37, among the
		// two slow ones, so 2 × 90ms = 180ms → 100ms; the median stays 10ms
		{name: "two slow round trips in 64 set the p99", rtts: append(repeat(62, 10*ms), 90*ms, 90*ms),
			deadline: 100 * ms, median: 10 * ms, call: 100 * ms},
		// min(40ms, 0.1 × 200ms) = 20ms
		{name: "the TTFT objective's share bounds a call", rtts: repeat(64, 20*ms), deadline: 40 * ms, median: 20 * ms,
			sloMs: 200, call: 20 * ms},
		// min(40ms, 0.1 × 1000ms) = 40ms
		{name: "a loose objective leaves the deadline", rtts: repeat(64, 20*ms), deadline: 40 * ms, median: 20 * ms,
			sloMs: 1000, call: 40 * ms},
		// the plugin's own 15ms, whatever was measured and whatever the objective
		{name: "a plugin's timeout is fixed", own: 15 * ms, rtts: repeat(64, 80*ms), deadline: 15 * ms, median: 80 * ms,
			sloMs: 50, call: 15 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newStageDeadline(pc, tt.own)
			for _, rtt := range tt.rtts {
				d.observe(rtt)
			}
			if got := d.now(); got != tt.deadline {
				t.Errorf("deadline %v, want %v", got, tt.deadline)
			}
			if got := d.typical(); got != tt.median {
				t.Errorf("typical round trip %v, want %v", got, tt.median)
			}
			if got := d.forRequest(&sdk.Request{SLO: sdk.SLO{TTFTMs: tt.sloMs}}); got != tt.call {
				t.Errorf("deadline of a call with TTFT objective %vms: %v, want %v", tt.sloMs, got, tt.call)
			}
		})
	}
}

// TestCallsPastABacklogAreNotSent: a call that would wait behind round trips queued ahead past
// its deadline fails at once instead of waiting the deadline out. The typical round trip is
// 10ms and the deadline 25ms; maxBatch is 2.
func TestCallsPastABacklogAreNotSent(t *testing.T) {
	pc := &config.Pipeline{StageTimeout: 25 * ms, StageTimeoutMax: 25 * ms, StageTimeoutSLOShare: 0.1}
	tests := []struct {
		name     string
		inFlight bool
		queued   int // cycles queued, not yet sent
		sloMs    float64
		ahead    int // round trips ahead; 0: the call is sent
	}{
		// no backlog: sent, however slow it may turn out
		{name: "idle stage", ahead: 0},
		// one in flight: at most 10ms left of it + 10ms its own = 20ms ≤ 25ms
		{name: "one round trip in flight", inFlight: true, ahead: 0},
		// nothing in flight, two full batches: 2 × 10ms ahead + 10ms its own = 30ms > 25ms
		{name: "two full batches queued", queued: 4, ahead: 2},
		// a partial batch is joined, not waited for: nothing ahead
		{name: "a partial batch queued", queued: 1, ahead: 0},
		// in flight and one full batch: ≥ 10ms + 10ms of its own = 20ms ≤ 25ms, at most 30ms:
		// expected within [20ms, 30ms]; with an objective of 150ms its deadline is 15ms < 20ms
		{name: "a tight objective misses behind one batch", inFlight: true, queued: 2, sloMs: 150, ahead: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &slot{deadline: newStageDeadline(pc, 0)}
			for range deadlineMinSamples {
				s.deadline.observe(10 * ms)
			}
			co := newCoalescer[int, int](2, nil)
			for range tt.queued {
				co.queue = append(co.queue, &pending[int, int]{})
			}
			if tt.inFlight {
				co.sentAt.Store(time.Now().UnixNano())
			}
			members := []*member{{ctx: context.Background(), in: &sdk.Cycle{Request: sdk.Request{SLO: sdk.SLO{TTFTMs: tt.sloMs}}}}}
			_, miss, cancel := withDeadlines(s, co, members)
			defer cancel()
			var me *missError
			switch {
			case tt.ahead == 0 && miss[0] != nil:
				t.Errorf("not sent (%v), want it sent", miss[0])
			case tt.ahead > 0 && !errors.As(miss[0], &me):
				t.Errorf("sent, want it answered at once with %d round trips ahead", tt.ahead)
			case tt.ahead > 0 && me.ahead != tt.ahead:
				t.Errorf("%d round trips ahead, want %d", me.ahead, tt.ahead)
			}
			if miss[0] != nil && FallbackLabel(fallbackReason(miss[0])) != FallbackTimeout {
				t.Errorf("the reason %q is not counted as a timeout", fallbackReason(miss[0]))
			}
		})
	}
}
