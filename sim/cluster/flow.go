package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/flowcontrol"
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
	// Queue configures each router's queue; its Estimate is the simulation's (the last verdict's
	// wait), so leave it nil.
	Queue    flowcontrol.Config
	Detector flowcontrol.DetectorConfig
	// Flow gives a request's fairness key within its band; nil puts every request in one flow.
	Flow func(*workload.Request) string
}

// flowState is one router's flow control: its queue and detector, and the wait of its last
// verdict, which slo-feasible's estimate reads.
type flowState struct {
	cfg      *FlowControl
	queue    *flowcontrol.Queue
	detector *flowcontrol.Detector
	wait     time.Duration
	expired  []flowcontrol.Shed
}

func newFlowState(cfg *FlowControl) (*flowState, error) {
	f := &flowState{cfg: cfg}
	qc := cfg.Queue
	if qc.Estimate != nil {
		return nil, errors.New("flow control: leave Queue.Estimate nil, the simulation sets it")
	}
	qc.Estimate = func(time.Time) time.Duration { return f.wait }
	var err error
	if f.queue, err = flowcontrol.New(qc); err != nil {
		return nil, err
	}
	if f.detector, err = flowcontrol.NewDetector(cfg.Detector); err != nil {
		return nil, err
	}
	return f, nil
}

// saturated asks the detector about the routed request: on the candidates as the pipeline's
// stages saw them (with its producer's predictions) when the router reports them, else on the
// cycle's endpoints (gauges and in-flight counts only).
func (f *flowState) saturated(c *sdk.Cycle, d Decision) bool {
	judged := c
	if d.Candidates != nil {
		judged = &sdk.Cycle{Request: c.Request, Endpoints: d.Candidates}
	}
	v := f.detector.Check(judged)
	if v.WaitKnown {
		f.wait = v.Wait
	}
	return v.Saturated
}

// hold queues request n at its arrival; a band without room sheds it at once.
func (f *flowState) hold(s *sim, n int) {
	r := &s.reqs[n]
	o := &s.outcomes[n]
	it := flowcontrol.Item{ID: strconv.Itoa(n), Band: int(r.Priority), Arrival: Epoch.Add(r.Arrival),
		Bytes: int64(4 * r.InputTokens)} // about four bytes of body a prompt token
	if f.cfg.Flow != nil {
		it.Flow = f.cfg.Flow(r)
	}
	if r.SLO.TTFTMs > 0 {
		it.Deadline = it.Arrival.Add(time.Duration(r.SLO.TTFTMs * float64(time.Millisecond)))
	}
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
