package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/foresight-router/foresight/host/builtin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/rs/zerolog"
)

// Flow control's two stages (the flowControl section; host/flowcontrol holds the queue): the
// saturation detector says which endpoints have room for a request, the ordering policy gives a
// request that must wait its key in the queue. They are not steps of Run: the router calls them
// around it — the ordering policy once for each request that queues, the detector once a decision
// (before Run on every endpoint for a detector that judges by state alone, after it on the
// candidates for one that reads the predictions).
//
// A pipeline whose config names a detector or order slot calls that plugin, with the slot's
// deadline, arms and fallback. Otherwise the built-ins the flowControl section configures serve,
// called directly: the fast path, a function call that costs what the check itself costs. The
// same built-ins are the slots' fallbacks, so a plugin that fails leaves flow control working as
// configured rather than off.

type (
	detectorSlot struct {
		*slot
		co    *coalescer[*sdk.Cycle, sdk.SaturationVerdict]
		cache roomCache // for a detector that reads endpoint state only
	}
	orderSlot struct {
		*slot
		co *coalescer[*sdk.Cycle, sdk.OrderKey]
	}
)

// flowStages is a pipeline's flow control stages.
type flowStages struct {
	detector *detectorSlot // nil: the built-in serves
	order    *orderSlot
	builtins *FlowBuiltins
}

// FlowBuiltins is flow control's built-in stages as a flowControl section configures them: the
// pipeline's when its config names no detector or order slot, and those slots' fallbacks. It
// serves DetectsBefore, Detect and Order as a pipeline does, for a caller without one (the
// simulator's heuristic strategies).
type FlowBuiltins struct {
	detector     sdk.Detector
	order        sdk.Orderer
	detectorType string
	orderType    string
	before       bool
	log          zerolog.Logger
}

// NewFlowBuiltins builds the built-ins f configures, its zero fields at their defaults (a section
// built in code). A validated section's parameters are accepted; ones a built-in refuses are
// logged, and it keeps its defaults.
func NewFlowBuiltins(f config.FlowControl, log zerolog.Logger) *FlowBuiltins {
	f = f.WithDefaults()
	dt, dp := f.BuiltinDetector()
	ot, op := f.BuiltinOrder()
	b := &FlowBuiltins{detector: configuredBuiltin(dt, dp, log).(sdk.Detector), detectorType: dt,
		order: configuredBuiltin(ot, op, log).(sdk.Orderer), orderType: ot, log: log}
	if r, ok := b.detector.(sdk.Reader); ok {
		b.before = judgesByState(r.Reads())
	}
	return b
}

func configuredBuiltin(typ string, params []byte, log zerolog.Logger) sdk.Plugin {
	p, _, err := builtin.New(typ)
	if err != nil {
		panic(fmt.Sprintf("flow control's built-in %s: %v", typ, err)) // the types are constants
	}
	if err := p.Configure(params); err != nil {
		log.WithLevel(zerolog.ErrorLevel).Err(err).Str("type", typ).RawJSON("parameters", params).
			Msg("flow control's built-in refused the flowControl section's parameters; it keeps its defaults")
	}
	return p
}

// judgesByState reports whether a detector with these reads judges endpoints by their state
// alone: it declares its reads, and the predictions are not among them.
func judgesByState(reads []string) bool {
	return len(reads) > 0 && !slices.Contains(reads, "endpoints.predictions")
}

// FlowProfile is the profile of a pipeline without profiles: the built-ins serve the config's one.
func (b *FlowBuiltins) FlowProfile() string { return config.DefaultProfile }

// FlowProfile names the scheduling profile whose pipeline p is (Profile): its flow control
// stages' calls are recorded under it.
func (p *Pipeline) FlowProfile() string { return p.Profile() }

// DetectsBefore: see Pipeline.DetectsBefore.
func (b *FlowBuiltins) DetectsBefore(*sdk.Request) bool { return b.before }

// Detect: see Pipeline.Detect.
func (b *FlowBuiltins) Detect(ctx context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, StageTrace) {
	began := time.Now()
	v, err := b.detector.Detect(ctx, c)
	t := b.trace(sdk.StageDetector, b.detectorType, began, err)
	t.Reason = cmp.Or(t.Reason, v.Reason)
	return v, t
}

// Order: see Pipeline.Order.
func (b *FlowBuiltins) Order(ctx context.Context, c *sdk.Cycle) (sdk.OrderKey, StageTrace) {
	began := time.Now()
	k, err := b.order.Order(ctx, c)
	return k, b.trace(sdk.StageOrder, b.orderType, began, err)
}

// trace is the trace of a call to a built-in. The built-ins do not fail on a well-formed cycle;
// an error is logged and kept in the trace.
func (b *FlowBuiltins) trace(stage sdk.Stage, typ string, began time.Time, err error) StageTrace {
	t := StageTrace{Stage: stage, Plugin: "flowControl", Type: typ, Duration: time.Since(began)}
	if err != nil {
		t.Reason = err.Error()
		b.log.WithLevel(zerolog.ErrorLevel).Err(err).Str("stage", stage.String()).Msg("flow control built-in failed")
	}
	return t
}

// KeepRoom keeps, in place, the endpoints of eps with room by a detector's room counts (one per
// endpoint, in eps' order) and returns them: the candidates of a decision made with a detector
// that judges before the pipeline. The slots after the last kept are cleared.
func KeepRoom(eps []sdk.Endpoint, room []int) []sdk.Endpoint {
	n := 0
	for i := range eps {
		if room[i] > 0 {
			eps[n] = eps[i]
			n++
		}
	}
	clear(eps[n:])
	return eps[:n]
}

// detectorFor returns the detector slot serving r (its arm's, in an experiment there); nil when
// the built-in serves.
func (p *Pipeline) detectorFor(r *sdk.Request) *detectorSlot {
	if p.flow.detector == nil {
		return nil
	}
	return armSlot(p, sdk.StageDetector, 0, p.exp.assign(*r), p.flow.detector)
}

// DetectsBefore reports whether the detector serving r judges endpoints by their state alone, so
// that the router asks it before Run, on every endpoint, and lets Run choose among those with
// room; false for one that reads the predictions (its GetInfo reads "endpoints.predictions", or
// declares no reads), which the router asks after Run, on the candidates.
func (p *Pipeline) DetectsBefore(r *sdk.Request) bool {
	if s := p.detectorFor(r); s != nil {
		return judgesByState(s.plugin.Status().Info.Reads)
	}
	return p.flow.builtins.before
}

// Detect asks the saturation detector about c: which of its endpoints have room for its request.
// A slot that fails, or answers past its deadline, is replaced by the built-in for this call, and
// the trace says why. A plugin that reads endpoint state only is answered from its last verdict
// until the endpoints' next scrape (roomCache): one call a scrape interval, not one a decision.
func (p *Pipeline) Detect(ctx context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, StageTrace) {
	s := p.detectorFor(&c.Request)
	if s == nil {
		return p.flow.builtins.Detect(ctx, c)
	}
	began := time.Now()
	t := StageTrace{Stage: sdk.StageDetector, Plugin: s.name, Type: s.typ}
	if stateOnly(s.plugin.Status().Info.Reads) {
		v, err := s.detectCached(ctx, c)
		if err != nil {
			t.Fallback = s.failed(err)
			v, _ = p.flow.builtins.Detect(ctx, c)
		}
		t.Duration, t.Reason = time.Since(began), v.Reason
		return v, t
	}
	v, err := callOne(s.slot, s.co, ctx, c)
	if err != nil {
		t.Fallback = s.failed(err)
		v, _ = p.flow.builtins.Detect(ctx, c)
	}
	t.Duration, t.Reason = time.Since(began), v.Reason
	return v, t
}

// detectCached answers c from the slot's cache, asking the plugin about the endpoints it misses
// only (roomCache). With room somewhere the wait is 0, and the reason "cached" when the plugin was
// not asked. With every endpoint full: the plugin's wait and reason when it judged them all, else
// an unknown wait and "room-used" (counts the router's dispatches used up).
func (s *detectorSlot) detectCached(ctx context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, error) {
	if len(c.Endpoints) == 0 {
		return callOne(s.slot, s.co, ctx, c)
	}
	room, slots, missed := s.cache.lookup(c)
	v := sdk.SaturationVerdict{Room: room, WaitMs: -1, Reason: "room-used", Slots: slots}
	if len(missed) > 0 {
		sub := &sdk.Cycle{Request: c.Request, Now: c.Now, Seed: c.Seed, Endpoints: make([]sdk.Endpoint, len(missed))}
		for j, i := range missed {
			sub.Endpoints[j] = c.Endpoints[i]
		}
		fresh, err := callOne(s.slot, s.co, ctx, sub)
		if err != nil {
			return v, err
		}
		s.cache.store(sub, fresh)
		for j, i := range missed {
			room[i] = fresh.Room[j]
			if len(fresh.Slots) == len(missed) && fresh.Slots[j] > 0 {
				if v.Slots == nil {
					v.Slots = make([]int, len(room))
				}
				v.Slots[i] = fresh.Slots[j]
			}
		}
		if len(missed) == len(room) {
			v.WaitMs, v.Reason = fresh.WaitMs, fresh.Reason
		}
	}
	if !v.Saturated() {
		v.WaitMs, v.Reason = 0, ""
		if len(missed) == 0 {
			v.Reason = "cached"
		}
	}
	return v, nil
}

// Order asks the ordering policy for the queue key of c's request; c.Now is its arrival. A slot
// that fails is replaced by the built-in for this call.
func (p *Pipeline) Order(ctx context.Context, c *sdk.Cycle) (sdk.OrderKey, StageTrace) {
	if p.flow.order == nil {
		return p.flow.builtins.Order(ctx, c)
	}
	began := time.Now()
	s := armSlot(p, sdk.StageOrder, 0, p.exp.assign(c.Request), p.flow.order)
	t := StageTrace{Stage: sdk.StageOrder, Plugin: s.name, Type: s.typ}
	k, err := callOne(s.slot, s.co, ctx, c)
	if err != nil {
		t.Fallback = s.failed(err)
		k, _ = p.flow.builtins.Order(ctx, c)
	}
	t.Duration = time.Since(began)
	return k, t
}

// callOne makes one stage call for a single cycle, with the slot's deadline: through the
// coalescer for a plugin process (it may share a round trip with other callers'), directly for an
// in-process stage.
func callOne[Req, Res any](s *slot, co *coalescer[Req, Res], ctx context.Context, req Req) (Res, error) {
	s.calls.Add(1)
	ctx, cancel := context.WithTimeout(ctx, s.deadline.now())
	defer cancel()
	var r transport.Result[Res]
	if s.inProcess {
		r = callLocal(co, ctx, req)
	} else {
		r = co.doMany([]context.Context{ctx}, []Req{req})[0]
	}
	return r.Value, r.Err
}

// The typed slots' batch calls, for stageCoalescer.
var (
	detectBatch = transport.BatchDetector.DetectBatch
	orderBatch  = transport.BatchOrderer.OrderBatch
)
