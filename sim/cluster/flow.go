package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/flowcontrol"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/workload"
)

// FlowControl holds requests in each simulated router while the pool is saturated for them, as
// the live router's flowControl section does (host/flowcontrol): a request that arrives to a
// saturated pool, or behind queued requests of its band or a higher one, waits in the router's
// queue; whenever an engine's step ends with a first token or a finished request, and at every
// scrape, the router decides the queue's head again through its pipeline on the state of that
// moment and dispatches it if the detector finds room, then the next head, until one does not
// fit. A request waits at most its band's TTL.
type FlowControl struct {
	// Queue configures each router's queue; its Estimate is the simulation's (the detector's last
	// known wait), so leave it nil.
	Queue flowcontrol.Config
	// Stages are flow control's saturation detector and ordering policy: a *pipeline.Pipeline's,
	// or the built-ins of a flowControl section (pipeline.NewFlowBuiltins).
	Stages FlowStages
	// Flow gives a request's fairness key within its band, unless the ordering policy gives one;
	// nil puts every request in one flow.
	Flow func(*workload.Request) string
	// AllCandidates leaves the router every endpoint while some has room (flowControl.candidates
	// all) rather than only those with room.
	AllCandidates bool
}

// FlowStages serves flow control's stages, as the live router's proxy.FlowStages.
type FlowStages interface {
	DetectsBefore(r *sdk.Request) bool
	Detect(ctx context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, pipeline.StageTrace)
	Order(ctx context.Context, c *sdk.Cycle) (sdk.OrderKey, pipeline.StageTrace)
}

// flowState is one router's flow control: its queue, and the detector's last known wait
// estimate, which the queue's Estimate reads.
type flowState struct {
	cfg     *FlowControl
	queue   *flowcontrol.Queue
	wait    time.Duration
	expired []flowcontrol.Shed
}

func newFlowState(cfg *FlowControl) (*flowState, error) {
	f := &flowState{cfg: cfg}
	qc := cfg.Queue
	if qc.Estimate != nil {
		return nil, errors.New("flow control: leave Queue.Estimate nil, the simulation sets it")
	}
	qc.Estimate = func(time.Time) time.Duration { return f.wait }
	if cfg.Stages == nil {
		return nil, errors.New("flow control: no stages (Stages)")
	}
	var err error
	if f.queue, err = flowcontrol.New(qc); err != nil {
		return nil, err
	}
	return f, nil
}

// restrict, for a detector that judges by state alone, asks it about c before the router decides
// and keeps only the endpoints with room (every endpoint with AllCandidates); false when none has
// room: the pool is saturated.
func (f *flowState) restrict(c *sdk.Cycle) bool {
	if !f.cfg.Stages.DetectsBefore(&c.Request) {
		return true
	}
	v := f.detect(c)
	if f.cfg.AllCandidates {
		return !v.Saturated()
	}
	c.Endpoints = pipeline.KeepRoom(c.Endpoints, v.Room)
	return len(c.Endpoints) > 0
}

// saturated, for a detector that reads the predictions, asks it about the routed request: on the
// candidates as the pipeline's stages saw them (with its producer's predictions) when the router
// reports them, else on the cycle's endpoints.
func (f *flowState) saturated(c *sdk.Cycle, d Decision) bool {
	if f.cfg.Stages.DetectsBefore(&c.Request) {
		return false // judged before the router decided
	}
	judged := c
	if d.Candidates != nil {
		judged = &sdk.Cycle{Request: c.Request, Endpoints: d.Candidates, Now: c.Now, Seed: c.Seed}
	}
	return f.detect(judged).Saturated()
}

// detect asks the detector about c and keeps its wait estimate. A verdict of the wrong length (a
// stage's bug) is an error of the simulation's caller, reported as a panic with the stage named.
func (f *flowState) detect(c *sdk.Cycle) sdk.SaturationVerdict {
	v, st := f.cfg.Stages.Detect(context.Background(), c)
	if len(v.Room) != len(c.Endpoints) {
		panic(fmt.Sprintf("flow control: detector %s answered %d room counts for %d endpoints", st.Type, len(v.Room), len(c.Endpoints)))
	}
	if v.WaitMs >= 0 {
		f.wait = time.Duration(v.WaitMs * float64(time.Millisecond))
	}
	return v
}

// hold queues request n at its arrival; a band without room sheds it at once.
func (f *flowState) hold(s *sim, n int) {
	r := &s.reqs[n]
	o := &s.outcomes[n]
	it := flowcontrol.Item{ID: strconv.Itoa(n), Band: int(r.Priority), Arrival: Epoch.Add(r.Arrival),
		Bytes: int64(4 * r.InputTokens)} // about four bytes of body a prompt token
	key, _ := f.cfg.Stages.Order(context.Background(), &sdk.Cycle{Now: it.Arrival, Request: s.request(r)})
	it.Rank, it.HopelessAfter = key.Rank, key.HopelessAfter
	if f.cfg.Flow != nil {
		it.Flow = f.cfg.Flow(r)
	}
	it.Flow = cmp.Or(key.Flow, it.Flow)
	o.Held = true
	if err := f.queue.Push(it); err != nil {
		var refused *flowcontrol.RefusedError
		if !errors.As(err, &refused) {
			panic(fmt.Sprintf("flow control refused a well-formed request: %v", err)) // the simulation built it
		}
		o.Shed, o.ShedReason = true, refused.Reason.String()
	}
}

// pump sheds v's expired requests, then dispatches the queue's head while the detector finds
// room for it, each decided again at now.
func (s *sim) pump(v *view, now time.Duration) error {
	f := v.flow
	if f == nil || f.queue.Total() == 0 {
		return nil
	}
	at := Epoch.Add(now)
	f.expired = f.queue.Expire(at, f.expired[:0])
	for _, sh := range f.expired {
		n, _ := strconv.Atoi(sh.Item.ID)
		o := &s.outcomes[n]
		o.Shed, o.ShedReason, o.Queued = true, sh.Reason.String(), now-s.reqs[n].Arrival
	}
	for {
		it, ok := f.queue.Peek(at)
		if !ok {
			return nil
		}
		n, _ := strconv.Atoi(it.ID)
		c, d, err := s.route(v, n, now)
		if err != nil {
			return err
		}
		if c == nil { // no endpoint has room
			return nil
		}
		if d.Shed { // the admitter changed its mind on the state of now
			f.queue.Dispatched(it.ID)
			s.outcomes[n].Queued = now - s.reqs[n].Arrival
			continue
		}
		if f.saturated(c, d) {
			return nil
		}
		f.queue.Dispatched(it.ID)
		if err := s.dispatch(v, n, c, d, now); err != nil {
			return err
		}
	}
}

// nextExpiry is the earliest time a queued request's TTL runs out, over every router.
func (s *sim) nextExpiry() (time.Duration, bool) {
	best, ok := time.Duration(0), false
	for _, v := range s.views {
		if v.flow == nil {
			continue
		}
		if at, has := v.flow.queue.NextExpiry(); has {
			d := at.Sub(Epoch)
			if !ok || d < best {
				best, ok = d, true
			}
		}
	}
	return best, ok
}

// pumpAll runs every router's pump at now.
func (s *sim) pumpAll(now time.Duration) error {
	for _, v := range s.views {
		if err := s.pump(v, now); err != nil {
			return err
		}
	}
	return nil
}
