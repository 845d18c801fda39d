package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// TestStageDeadlineRisesToItsCap: a stage that answers no call within its deadline does not
// keep missing the same one. Each missed call took at least its deadline, so the deadline
// doubles each time the slot recomputes it (10ms, then ≥ 20ms, then ≥ 40ms) until
// stageTimeoutMax (40ms) caps it; a stage beside it with its own timeout keeps that one.
func TestStageDeadlineRisesToItsCap(t *testing.T) {
	p := buildWith(t, []string{"stageTimeout: 10ms", "stageTimeoutMax: 40ms"},
		scorer("slow", "", func(ctx context.Context, _ *sdk.Cycle) ([]float64, error) { return block[[]float64](ctx) }),
		scorer("fixed", "", func(ctx context.Context, _ *sdk.Cycle) ([]float64, error) { return block[[]float64](ctx) }).within("15ms"))
	deadlines := func() map[string]time.Duration {
		out := map[string]time.Duration{}
		for _, s := range p.Stats() {
			out[s.Plugin] = s.Deadline
		}
		return out
	}
	if got := deadlines(); got["slow"] != 10*time.Millisecond || got["fixed"] != 15*time.Millisecond {
		t.Fatalf("deadlines before any call %v, want slow 10ms, fixed 15ms", got)
	}
	// 8 round trips of ≥ 10ms: 2 × p99 ≥ 20ms; 8 more of ≥ 20ms: ≥ 40ms, capped; a few more to spare
	for range 20 {
		tr := p.Run(context.Background(), testCycle())
		if tr.Scorers[0].Fallback != "deadline exceeded" {
			t.Fatalf("slow scorer's fallback %q, want deadline exceeded", tr.Scorers[0].Fallback)
		}
	}
	if got := deadlines(); got["slow"] != 40*time.Millisecond || got["fixed"] != 15*time.Millisecond {
		t.Errorf("deadlines after 20 missed calls %v, want slow at its 40ms cap, fixed at its own 15ms", got)
	}
}
