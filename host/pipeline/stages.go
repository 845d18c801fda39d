package pipeline

import (
	"context"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// Typed slots: each pairs a slot with a coalescer for its stage's batch call.

type (
	producerSlot struct {
		*slot
		co   *coalescer[*sdk.Cycle, []sdk.Prediction]
		last *lastPredictions // what stands in for it first when it fails (degrade.go)
	}
	filterSlot struct {
		*slot
		co *coalescer[*sdk.Cycle, sdk.FilterVerdict]
	}
	scorerSlot struct {
		*slot
		co *coalescer[*sdk.Cycle, transport.Scored]
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

// pickReq is one cycle's pick request: its weighted scores and, in a round, its weighted
// after-scores (nil otherwise).
type pickReq struct {
	cycle         *sdk.Cycle
	scores, after []float64
}

// pickBatch adapts a BatchPicker to the coalescer's one-request-per-cycle shape.
func pickBatch(p transport.BatchPicker, ctx context.Context, reqs []pickReq) ([]transport.Result[[]int], error) {
	cycles, scores, after := make([]*sdk.Cycle, len(reqs)), make([][]float64, len(reqs)), make([][]float64, len(reqs))
	for i, r := range reqs {
		cycles[i], scores[i], after[i] = r.cycle, r.scores, r.after
	}
	return p.PickBatch(ctx, cycles, scores, after)
}

// stageCoalescer returns a coalescer whose batch call reaches the slot's current client as C.
func stageCoalescer[C, Req, Res any](s *slot, maxBatch int, invoke func(C, context.Context, []Req) ([]transport.Result[Res], error)) *coalescer[Req, Res] {
	return newCoalescer(maxBatch, func(ctx context.Context, reqs []Req) ([]transport.Result[Res], error) {
		c, err := client[C](s)
		if err != nil {
			return nil, err
		}
		began := time.Now()
		res, err := invoke(c, ctx, reqs)
		switch {
		case err == nil:
			s.deadline.observe(time.Since(began))
			s.plugin.CallAnswered()
		case isDeadline(err):
			// It took at least this long: counted, so that a stage slower than its deadline
			// raises it rather than missing it for ever unmeasured.
			s.deadline.observe(time.Since(began))
			s.plugin.CallTimedOut() // a process that misses every deadline for long is restarted
		}
		return res, err
	})
}

// callAll makes the slot's stage call for every member, each with its deadline (withDeadlines)
// under its own context: one coalesced batch for a plugin process or a round, direct calls for an
// in-process stage otherwise (nothing to share; it must honour ctx, as the built-ins do). A call
// that the backlog would make miss its deadline is not sent: it fails at once. req builds a
// member's request.
func callAll[Req, Res any](s *slot, co *coalescer[Req, Res], ms []*member, req func(*member) Req) []transport.Result[Res] {
	s.calls.Add(int64(len(ms)))
	ctxs, miss, cancel := withDeadlines(s, co, ms)
	defer cancel()
	out := make([]transport.Result[Res], len(ms))
	var sendCtxs []context.Context
	var sendReqs []Req
	var at []int // positions in ms of the calls sent
	for i, m := range ms {
		if miss[i] != nil {
			out[i].Err = miss[i]
			continue
		}
		sendCtxs, sendReqs, at = append(sendCtxs, ctxs[i]), append(sendReqs, req(m)), append(at, i)
	}
	if !s.inProcess || inRound(ms) { // a round is one batch, in-process too (round.go)
		if len(at) > 0 {
			for k, r := range co.doMany(sendCtxs, sendReqs) {
				out[at[k]] = r
			}
		}
		return out
	}
	for k, i := range at {
		out[i] = callLocal(co, sendCtxs[k], sendReqs[k])
	}
	return out
}

// callLocal makes an in-process stage's call for one request, counted as a batch of one.
func callLocal[Req, Res any](co *coalescer[Req, Res], ctx context.Context, req Req) transport.Result[Res] {
	co.batches.Add(1)
	results, err := co.call(ctx, []Req{req})
	switch {
	case err != nil:
		return transport.Result[Res]{Err: err}
	case len(results) != 1:
		return transport.Result[Res]{Err: errShortBatch}
	}
	return results[0]
}
