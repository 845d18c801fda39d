package cluster

import (
	"fmt"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/kvindex"
	"github.com/foresight-router/foresight/internal/splitmix"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// A request's way into the fleet: its arrival, its cycle, the router's decision and its dispatch.

// arrive builds the request's cycle, routes it and dispatches it; with flow control, it queues
// it instead when requests of its band or a higher one wait, or when the pool is saturated for it.
func (s *sim) arrive(n int) error {
	r := &s.reqs[n]
	v := s.views[0]
	if s.assign != nil {
		i := s.assign(r)
		if i < 0 || i >= len(s.views) {
			return fmt.Errorf("routing request %d: replica %d out of range", r.ID, i)
		}
		v = s.views[i]
	}
	s.outcomes[n] = stats.Outcome{Arrival: r.Arrival, SLO: sdk.SLO{TTFTMs: r.SLO.TTFTMs, TPOTMs: r.SLO.TPOTMs}}
	if s.cfg.Direct != nil {
		if i, ok := s.cfg.Direct(r); ok {
			if i < 0 || i >= len(s.engines) {
				return fmt.Errorf("request %d sent directly to server %d, out of range", r.ID, i)
			}
			return s.direct(n, i)
		}
	}
	if s.cfg.Disaggregation != nil {
		return s.arriveSplit(v, n)
	}
	if v.flow != nil && v.flow.queue.Ahead(int(r.Priority)) > 0 {
		v.flow.hold(s, n)
		return nil
	}
	c, d, err := s.route(v, n, r.Arrival)
	if err != nil || d.Shed {
		return err
	}
	if c == nil || (v.flow != nil && v.flow.saturated(c, d)) {
		v.flow.hold(s, n)
		return nil
	}
	return s.dispatch(v, n, c, d, r.Arrival)
}

// route builds request n's cycle as replica v sees it at now and asks v's router; a shed
// request's outcome is recorded. With flow control judging endpoints by their state, the cycle
// keeps only the endpoints with room; without any, route returns a nil cycle: the pool is
// saturated for the request.
func (s *sim) route(v *view, n int, now time.Duration) (*sdk.Cycle, Decision, error) {
	c := s.cycle(v, &s.reqs[n], now)
	if v.flow != nil && !v.flow.restrict(c) {
		return nil, Decision{}, nil
	}
	d, err := s.decide(v, n, c, now)
	if err != nil {
		return nil, d, err
	}
	return c, d, nil
}

// decide asks v's router for c's decision at now; a shed request's outcome is recorded.
func (s *sim) decide(v *view, n int, c *sdk.Cycle, now time.Duration) (Decision, error) {
	r := &s.reqs[n]
	d, err := v.Router.Route(c, &Fleet{Engines: s.engines, Arrival: s.engineRequest(n), Now: now})
	switch {
	case err != nil:
		return d, fmt.Errorf("routing request %d: %w", r.ID, err)
	case d.Shed:
		o := &s.outcomes[n]
		o.Shed, o.ShedReason = true, "admitter"
	case d.Endpoint < 0 || d.Endpoint >= len(c.Endpoints):
		return d, fmt.Errorf("routing request %d: endpoint %d out of range", r.ID, d.Endpoint)
	}
	return d, nil
}

func (s *sim) engineRequest(n int) engine.Request {
	r := &s.reqs[n]
	return engine.Request{ID: uint64(n), InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Blocks: r.Blocks, OutputBlocks: r.OutputBlocks}
}

// dispatch sends request n to the decision's endpoint at now, in v's ledger and prefix index.
func (s *sim) dispatch(v *view, n int, c *sdk.Cycle, d Decision, now time.Duration) error {
	id := c.Endpoints[d.Endpoint].ID
	if err := s.engines[s.index[id]].Add(s.engineRequest(n), now); err != nil {
		return fmt.Errorf("dispatching request %d: %w", s.reqs[n].ID, err)
	}
	return s.record(v, n, c, d, now)
}

// record notes request n as dispatched to the decision's endpoint at now, in v's ledger and
// prefix index, and as that endpoint's in its outcome. A decode hop brings no prompt to compute.
func (s *sim) record(v *view, n int, c *sdk.Cycle, d Decision, now time.Duration) error {
	r := &s.reqs[n]
	o := &s.outcomes[n]
	o.Predicted = d.Predicted
	if o.Held {
		o.Queued = now - r.Arrival
	}
	id, state := c.Endpoints[d.Endpoint].ID, c.Endpoints[d.Endpoint].State
	o.Server = id
	uncached := int64(float64(r.InputTokens) * (1 - state.PrefixMatch))
	if c.Request.HopOn(id) == sdk.HopDecode {
		uncached = 0
	}
	tracked := v.acct.Dispatch(id, inflight.Request{ID: c.Request.ID, PrefillTokens: uncached,
		OutputTokens: int64(r.OutputTokens), TPOTSLOMs: r.SLO.TPOTMs, DispatchedAt: c.Now}, r.Blocks)
	var held *kvindex.Hold
	if v.kv != nil && c.Request.HopOn(id) != sdk.HopDecode {
		held = v.kv.Hold(id, r.Blocks)
	}
	s.flights[n] = &flight{idx: n, replica: v, tracked: tracked, held: held, sample: sdk.Sample{
		Request: c.Request, EndpointID: id, State: state, Predicted: d.Predicted, DispatchedAt: c.Now}}
	return nil
}

// request is what the stages see of r. Its max_tokens is its actual output length (a client that
// sets max_tokens to what it gets).
func (s *sim) request(r *workload.Request) sdk.Request {
	return sdk.Request{
		ID: strconv.FormatUint(r.ID, 10), InputTokens: int64(r.InputTokens), MaxOutputTokens: int64(r.OutputTokens),
		Streaming: r.Streaming, SLO: sdk.SLO{TTFTMs: r.SLO.TTFTMs, TPOTMs: r.SLO.TPOTMs}, Priority: r.Priority,
		SessionID: r.SessionID, PrefixBlockHashes: r.Blocks,
	}
}

// cycle is what the replica v would know at now: scraped gauges, its own in-flight accounting
// and its prefix index.
func (s *sim) cycle(v *view, r *workload.Request, now time.Duration) *sdk.Cycle {
	c := &sdk.Cycle{
		Request:   s.request(r),
		Endpoints: make([]sdk.Endpoint, len(s.engines)),
		Now:       Epoch.Add(now),
		Seed:      splitmix.Mix((s.cfg.Seed ^ splitmix.Mix(r.ID+1+splitmix.Gamma)) + splitmix.Gamma),
	}
	age := float64(now-s.scrapeAt) / float64(time.Millisecond)
	for i, m := range s.scraped {
		st := sdk.EndpointState{KVCacheUsage: m.KVCacheUsage, Waiting: int64(m.Waiting), Running: int64(m.Running),
			PrefixMatch: s.prefixMatch(v, i, r), MetricsAgeMs: age}
		v.inflight.Fill(s.ids[i], c.Now, Epoch.Add(s.scrapeAt), &st)
		c.Endpoints[i] = sdk.Endpoint{ID: s.ids[i], State: st}
	}
	return c
}
