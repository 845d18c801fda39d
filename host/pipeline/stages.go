package pipeline

import (
	"context"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Typed slots: each pairs a slot with a coalescer for its stage's batch call.

type (
	producerSlot struct {
		*slot
		co *coalescer[*sdk.Cycle, []sdk.Prediction]
	}
	filterSlot struct {
		*slot
		co *coalescer[*sdk.Cycle, sdk.FilterVerdict]
	}
	scorerSlot struct {
		*slot
		co *coalescer[*sdk.Cycle, []float64]
	}
	admitterSlot struct {
		*slot
		co *coalescer[*sdk.Cycle, sdk.AdmitVerdict]
	}
	pickerSlot struct {
		*slot
		co *coalescer[pickReq, []int]
	}
)

type pickReq struct {
	cycle  *sdk.Cycle
	scores []float64
}

// pickBatch adapts a BatchPicker to the coalescer's one-request-per-cycle shape.
func pickBatch(p sdk.BatchPicker, ctx context.Context, reqs []pickReq) ([]sdk.Result[[]int], error) {
	cycles, scores := make([]*sdk.Cycle, len(reqs)), make([][]float64, len(reqs))
	for i, r := range reqs {
		cycles[i], scores[i] = r.cycle, r.scores
	}
	return p.PickBatch(ctx, cycles, scores)
}

// stageCoalescer returns a coalescer whose batch call reaches the slot's current client as C.
func stageCoalescer[C, Req, Res any](s *slot, maxBatch int, invoke func(C, context.Context, []Req) ([]sdk.Result[Res], error)) *coalescer[Req, Res] {
	return newCoalescer(maxBatch, func(ctx context.Context, reqs []Req) ([]sdk.Result[Res], error) {
		c, err := client[C](s)
		if err != nil {
			return nil, err
		}
		return invoke(c, ctx, reqs)
	})
}

// call runs one call with the slot's deadline: coalesced for a plugin process, direct for an
// in-process stage (nothing to share; it must honour ctx, as the built-ins do).
func call[Req, Res any](ctx context.Context, s *slot, co *coalescer[Req, Res], req Req) (Res, error) {
	s.calls.Add(1)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if !s.inProcess {
		return co.do(ctx, req)
	}
	co.batches.Add(1)
	results, err := co.call(ctx, []Req{req})
	if err == nil && len(results) != 1 {
		err = errShortBatch
	}
	if err != nil {
		var zero Res
		return zero, err
	}
	return results[0].Value, results[0].Err
}
