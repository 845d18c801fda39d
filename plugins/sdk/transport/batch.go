package transport

import (
	"context"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
)

// The host sees every stage through a batch interface: one call answers several cycles, so cycles
// waiting for the same plugin can share a round trip. The returned error means the call as a whole
// failed (transport, crash); a single cycle's failure travels in its Result.

// Result is one cycle's answer within a batch: a value, or the stage's error for that cycle.
type Result[T any] struct {
	Value T
	Err   error
}

// BatchProducer is a producer as the host calls it.
type BatchProducer interface {
	ProduceBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[[]sdk.Prediction], error)
	Observe(ctx context.Context, samples []sdk.Sample) (sdk.ObserveResult, error)
}

// BatchFilter is a filter as the host calls it.
type BatchFilter interface {
	FilterBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.FilterVerdict], error)
}

// ChainFilter is a multi-instance filter plugin's fused call (see FilterClient.FilterChain).
type ChainFilter interface {
	FilterChain(ctx context.Context, cycles []*sdk.Cycle, chain []string) ([][]Result[sdk.FilterVerdict], error)
}

// BatchScorer is a scorer as the host calls it.
type BatchScorer interface {
	ScoreBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[Scored], error)
}

// Scored is a scorer's answer for one cycle: one score per endpoint and, for a cycle in a round
// (sdk.Cycle.InRound), each endpoint's score had one more request like it been placed there first
// (sdk.AfterScores); After is nil where the scorer did not say.
type Scored struct {
	Scores []float64
	After  []float64
}

// BatchAdmitter is an admitter as the host calls it.
type BatchAdmitter interface {
	AdmitBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.AdmitVerdict], error)
}

// BatchPicker is a picker as the host calls it; scores[i] belongs to cycles[i], and so does
// after[i], the weighted after-scores of a cycle in a round (nil outside rounds; after itself may
// be nil: no cycle has any). A picker whose Info reports Rounds places a round's cycles in order
// (sdk.PickRound).
type BatchPicker interface {
	PickBatch(ctx context.Context, cycles []*sdk.Cycle, scores, after [][]float64) ([]Result[[]int], error)
}

// BatchDetector is a saturation detector as the host calls it.
type BatchDetector interface {
	DetectBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.SaturationVerdict], error)
}

// BatchOrderer is an ordering policy as the host calls it.
type BatchOrderer interface {
	OrderBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.OrderKey], error)
}

// Local adapts an in-process stage implementation to the host's batch interfaces by answering the
// cycles one by one. It implements every Batch interface whose stage p implements.
type Local struct{ P sdk.Plugin }

// ProduceBatch calls Produce per cycle.
func (l Local) ProduceBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[[]sdk.Prediction], error) {
	p := l.P.(sdk.Producer)
	return each(cycles, func(c *sdk.Cycle) ([]sdk.Prediction, error) { return p.Produce(ctx, c) },
		func(c *sdk.Cycle, v []sdk.Prediction) error { return checkPredictions(v, len(c.Endpoints)) }), nil
}

// Observe forwards to the producer.
func (l Local) Observe(ctx context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	return l.P.(sdk.Producer).Observe(ctx, samples)
}

// FilterBatch calls Filter per cycle.
func (l Local) FilterBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.FilterVerdict], error) {
	f := l.P.(sdk.Filter)
	return each(cycles, func(c *sdk.Cycle) (sdk.FilterVerdict, error) { return f.Filter(ctx, c) },
		func(c *sdk.Cycle, v sdk.FilterVerdict) error { return wire.CheckIndices(v.Kept, len(c.Endpoints)) }), nil
}

// ScoreBatch calls Score per cycle, and for a cycle in a round finds its after-scores as a plugin
// process would (sdk.AfterScores).
func (l Local) ScoreBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[Scored], error) {
	s := l.P.(sdk.Scorer)
	return each(cycles, func(c *sdk.Cycle) (Scored, error) {
		scores, err := s.Score(ctx, c)
		if err != nil {
			return Scored{}, err
		}
		after, err := sdk.AfterScores(ctx, s, c, scores)
		return Scored{Scores: scores, After: after}, err
	}, func(c *sdk.Cycle, v Scored) error { return checkScored(v, len(c.Endpoints)) }), nil
}

// AdmitBatch calls Admit per cycle.
func (l Local) AdmitBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.AdmitVerdict], error) {
	a := l.P.(sdk.Admitter)
	return each(cycles, func(c *sdk.Cycle) (sdk.AdmitVerdict, error) { return a.Admit(ctx, c) }, nil), nil
}

// PickBatch calls Pick per cycle, placing a round's cycles in order as a plugin process would
// (sdk.PickRound).
func (l Local) PickBatch(ctx context.Context, cycles []*sdk.Cycle, scores, after [][]float64) ([]Result[[]int], error) {
	if err := checkPickBatch(cycles, scores, after); err != nil {
		return nil, err
	}
	p := l.P.(sdk.Picker)
	out := make([]Result[[]int], len(cycles))
	sdk.PickRound(cycles, scores, after, func(i int, c *sdk.Cycle, s []float64) []int {
		out[i] = guard(func() ([]int, error) { return p.Pick(ctx, c, s) })
		if out[i].Err == nil {
			out[i].Err = wire.CheckIndices(out[i].Value, len(c.Endpoints))
		}
		if out[i].Err != nil {
			return nil
		}
		return out[i].Value
	})
	return out, nil
}

// DetectBatch calls Detect per cycle.
func (l Local) DetectBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.SaturationVerdict], error) {
	d := l.P.(sdk.Detector)
	return each(cycles, func(c *sdk.Cycle) (sdk.SaturationVerdict, error) { return d.Detect(ctx, c) },
		func(c *sdk.Cycle, v sdk.SaturationVerdict) error { return checkRoom(v, len(c.Endpoints)) }), nil
}

// OrderBatch calls Order per cycle.
func (l Local) OrderBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.OrderKey], error) {
	o := l.P.(sdk.Orderer)
	return each(cycles, func(c *sdk.Cycle) (sdk.OrderKey, error) { return o.Order(ctx, c) }, nil), nil
}

// each answers every cycle with call; check, when set, holds each answer to the rules the wire
// client applies (an answer that fails is that cycle's error, like a malformed wire answer).
func each[T any](cycles []*sdk.Cycle, call func(*sdk.Cycle) (T, error), check func(*sdk.Cycle, T) error) []Result[T] {
	out := make([]Result[T], len(cycles))
	for i, c := range cycles {
		out[i] = guard(func() (T, error) { return call(c) })
		if out[i].Err == nil && check != nil {
			out[i].Err = check(c, out[i].Value)
		}
	}
	return out
}

// guard runs call through sdk's protection: a panic becomes that cycle's error, so one bad cycle
// cannot take down the host, and a plain error gets the stage-error status it has on the wire.
func guard[T any](call func() (T, error)) Result[T] {
	var r Result[T]
	r.Err = hooks.Protect(func() (err error) {
		r.Value, err = call()
		return err
	})
	return r
}
