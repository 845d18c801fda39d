package pipeline_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
	"github.com/google/go-cmp/cmp"
)

// TestProducerDegradeOrder: a producer that blocks past its deadline is stood in for by its own
// last predictions while they are recent (predictionMaxAge 1s, by the cycles' clocks), then by
// the prior from each endpoint's queue and first-token rate, then by nothing (the scorers'
// heuristics decide). The steps run in order on one pipeline.
func TestProducerDegradeOrder(t *testing.T) {
	var hang atomic.Bool
	j := &journal{}
	p := buildWith(t, []string{"stageTimeout: 1s", "predictionMaxAge: 1s"},
		producer("predict", func(ctx context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
			if hang.Load() {
				return block[[]sdk.Prediction](ctx)
			}
			out := make([]sdk.Prediction, len(c.Endpoints))
			for i := range out {
				out[i] = sdk.Prediction{Valid: true, TTFTMs: float64(100 * (i + 1)), TPOTMs: 5}
			}
			return out, nil
		}).within("20ms"),
		filter("look", func(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
			j.note("look", c, nil)
			return sdk.FilterVerdict{Kept: heuristics.AllIndices(len(c.Endpoints))}, nil
		}))
	t0 := testCycle().Now
	// rates sets each endpoint's first-token rate (a: waiting 2, b: 0, c: 1).
	rates := func(r ...float64) func(*sdk.Cycle) {
		return func(c *sdk.Cycle) {
			for i := range c.Endpoints {
				c.Endpoints[i].State.FirstTokenRate = r[i]
			}
		}
	}
	pred := func(ttft, tpot float64) sdk.Prediction {
		return sdk.Prediction{Valid: true, TTFTMs: ttft, TPOTMs: tpot}
	}
	answered := []sdk.Prediction{pred(100, 5), pred(200, 5), pred(300, 5)}
	// prior TTFT = 1000 · (waiting + 1) / rate: a 1000·3/10 = 300, b 1000·1/10 = 100, c 1000·2/20 = 100
	prior := []sdk.Prediction{pred(300, 0), pred(100, 0), pred(100, 0)}
	steps := []struct {
		name     string
		hang     bool
		at       time.Duration // the cycle's Now after t0
		cycle    func(*sdk.Cycle)
		fallback string
		degraded string
		preds    []sdk.Prediction // what the filter and the trace's candidates carry
	}{
		{name: "the producer answers", at: 0, cycle: rates(10, 10, 20), preds: answered},
		{name: "hangs: its predictions of 300ms ago are reused", hang: true, at: 300 * time.Millisecond,
			cycle: rates(10, 10, 20), fallback: "deadline exceeded", degraded: pipeline.DegradeReused, preds: answered},
		{name: "hangs: 1s ago is still recent", hang: true, at: time.Second,
			cycle: rates(10, 10, 20), fallback: "deadline exceeded", degraded: pipeline.DegradeReused, preds: answered},
		{name: "hangs: an endpoint it never predicted for, so the prior", hang: true, at: 500 * time.Millisecond,
			cycle: func(c *sdk.Cycle) {
				rates(10, 10, 20)(c)
				c.Endpoints[2].ID = "new"
			}, fallback: "deadline exceeded", degraded: pipeline.DegradePrior, preds: prior},
		{name: "hangs: 2s ago is too old, so the prior", hang: true, at: 2 * time.Second,
			cycle: rates(10, 10, 20), fallback: "deadline exceeded", degraded: pipeline.DegradePrior, preds: prior},
		{name: "hangs: the prior is valid only where it has a rate", hang: true, at: 2 * time.Second,
			cycle: rates(10, 0, 0), fallback: "deadline exceeded", degraded: pipeline.DegradePrior,
			preds: []sdk.Prediction{pred(300, 0), {}, {}}},
		{name: "hangs: no rate anywhere, so no predictions", hang: true, at: 3 * time.Second,
			cycle: rates(0, 0, 0), fallback: "deadline exceeded", degraded: pipeline.DegradeNone, preds: make([]sdk.Prediction, 3)},
		{name: "answers again: no fallback", at: 4 * time.Second, cycle: rates(0, 0, 0), preds: answered},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			hang.Store(st.hang)
			c := testCycle()
			c.Now = t0.Add(st.at)
			st.cycle(c)
			tr := p.Run(context.Background(), c)
			if tr.Producer == nil || tr.Producer.Fallback != st.fallback || tr.Producer.Degraded != st.degraded {
				t.Fatalf("producer trace %+v, want fallback %q degraded %q", tr.Producer, st.fallback, st.degraded)
			}
			for what, eps := range map[string][]sdk.Endpoint{"candidates": tr.Candidates, "the filter": j.saw["look"]} {
				got := make([]sdk.Prediction, len(eps))
				for i, e := range eps {
					got[i] = e.Prediction
				}
				if diff := cmp.Diff(st.preds, got, approx); diff != "" {
					t.Errorf("%s' predictions (-want +got):\n%s", what, diff)
				}
			}
			var view struct {
				Stages []struct{ Degraded, Reason string }
			}
			if b, err := json.Marshal(tr); err != nil || json.Unmarshal(b, &view) != nil || view.Stages[0].Degraded != st.degraded {
				t.Errorf("the trace's JSON gives the producer %+v (%v), want degraded %q", view.Stages, err, st.degraded)
			}
		})
	}
}
