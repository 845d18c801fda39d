package cluster

import (
	"fmt"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/engine"
)

// Prefill/decode disaggregation, as the live router serves it (host/proxy/disagg.go): a request
// gets a decode server among the servers whose role decodes, on a cycle whose hop is the decode
// hop, then a prefill server among those whose role prefills and — with split adaptive — its
// decode server, which would serve it whole. Split, it runs on the prefill server with one output
// token; when that token comes the router sends the decode hop, which the decode server's engine
// serves with its prompt's KV pulled (engine.Request.RemotePrefill, the engine's KV transfer
// cost). The client's TTFT runs from its arrival to the decode server's first token.

// Disaggregation makes a fleet prefill/decode disaggregated.
type Disaggregation struct {
	// Roles gives each engine's role, in the order of Config.Engines.
	Roles []endpoints.Role
	// Split is config.SplitAdaptive, config.SplitAlways or config.SplitNever.
	Split string
}

// prefillBase marks a prefill hop's engine request ID: request n's prefill hop is prefillBase+n,
// so that its events are told from its decode hop's (ID n).
const prefillBase = uint64(1) << 62

// hop is a split request's prefill hop, from its dispatch to its answer.
type hop struct {
	idx     int // into reqs
	replica *view
	tracked *stateplane.Flight
	sample  sdk.Sample
	decode  int // the decode server's engine index
}

func (d *Disaggregation) check(n int) error {
	if len(d.Roles) != n {
		return fmt.Errorf("disaggregation: %d roles for %d engines", len(d.Roles), n)
	}
	switch d.Split {
	case config.SplitAdaptive, config.SplitAlways, config.SplitNever:
	default:
		return fmt.Errorf("disaggregation: split %q is not adaptive, always or never", d.Split)
	}
	return nil
}

// restrict keeps the endpoints of c whose role accepts, and also the endpoint also ("": none).
func (s *sim) restrict(c *sdk.Cycle, accept func(endpoints.Role) bool, also string) {
	roles := s.cfg.Disaggregation.Roles
	kept := c.Endpoints[:0]
	for _, e := range c.Endpoints {
		if accept(roles[s.index[e.ID]]) || e.ID == also {
			kept = append(kept, e)
		}
	}
	c.Endpoints = kept
}

// arriveSplit routes request n on a disaggregated fleet: its decode decision, then its prefill
// decision, and dispatches it as two hops or whole on its decode server.
func (s *sim) arriveSplit(v *view, n int) error {
	r := &s.reqs[n]
	d := s.cfg.Disaggregation
	c := s.cycle(v, r, r.Arrival)
	s.restrict(c, endpoints.Role.Decodes, "")
	if d.Split != config.SplitNever {
		c.Request.Disaggregation = sdk.Disaggregation{Hop: sdk.HopDecode}
	}
	dec, err := s.decide(v, n, c, r.Arrival)
	if err != nil || dec.Shed || d.Split == config.SplitNever {
		if err == nil && !dec.Shed {
			err = s.dispatch(v, n, c, dec, r.Arrival)
		}
		return err
	}
	de := c.Endpoints[dec.Endpoint]
	pc := s.cycle(v, r, r.Arrival)
	pc.Request.Disaggregation = sdk.Disaggregation{Hop: sdk.HopPrefill}
	if dec.Predicted.Valid { // the router's prediction for its pick
		pc.Request.Disaggregation.DecodeTTFTMs, pc.Request.Disaggregation.DecodeTPOTMs = dec.Predicted.TTFTMs, dec.Predicted.TPOTMs
	}
	also := ""
	if d.Split == config.SplitAdaptive {
		pc.Request.Disaggregation.DecodeEndpoint, also = de.ID, de.ID
	}
	s.restrict(pc, endpoints.Role.Prefills, also)
	if len(pc.Endpoints) == 1 && pc.Endpoints[0].ID == de.ID {
		pc.Endpoints = pc.Endpoints[:0] // no server prefills: nothing to decide, as the live router
	}
	var pre Decision
	if len(pc.Endpoints) > 0 {
		if pre, err = v.Router.Route(pc, &Fleet{Engines: s.engines, Arrival: s.engineRequest(n), Now: r.Arrival}); err != nil {
			return fmt.Errorf("routing request %d's prefill: %w", r.ID, err)
		}
		if !pre.Shed && (pre.Endpoint < 0 || pre.Endpoint >= len(pc.Endpoints)) {
			return fmt.Errorf("routing request %d's prefill: endpoint %d out of range", r.ID, pre.Endpoint)
		}
	}
	if len(pc.Endpoints) == 0 || pre.Shed || pc.Endpoints[pre.Endpoint].ID == de.ID {
		// Whole on the decode server: its cycle says so, as the live router's dispatch does.
		c.Request.Disaggregation = sdk.Disaggregation{}
		if len(pc.Endpoints) > 0 && !pre.Shed {
			dec.Predicted = pre.Predicted // its prediction for the request whole
		}
		return s.dispatch(v, n, c, dec, r.Arrival)
	}
	return s.dispatchSplit(v, n, c, dec, pc, pre)
}

// dispatchSplit sends request n's prefill hop to the prefill decision's server now, and records
// its decode hop on the decode decision's server, whose engine gets it when the prefill answers.
func (s *sim) dispatchSplit(v *view, n int, c *sdk.Cycle, dec Decision, pc *sdk.Cycle, pre Decision) error {
	r := &s.reqs[n]
	now := r.Arrival
	p := pc.Endpoints[pre.Endpoint]
	pr := s.engineRequest(n)
	pr.ID, pr.OutputTokens, pr.OutputBlocks = prefillBase+uint64(n), 1, nil
	if err := s.engines[s.index[p.ID]].Add(pr, now); err != nil {
		return fmt.Errorf("dispatching request %d's prefill: %w", r.ID, err)
	}
	uncached := int64(float64(r.InputTokens) * (1 - p.State.PrefixMatch))
	// The prefill server computes the prompt and caches it.
	tracked := v.acct.Dispatch(p.ID, inflight.Request{ID: pc.Request.ID, PrefillTokens: uncached, OutputTokens: 1,
		TPOTSLOMs: r.SLO.TPOTMs, DispatchedAt: pc.Now}, r.Blocks)
	s.hops[n] = &hop{idx: n, replica: v, tracked: tracked, decode: s.index[c.Endpoints[dec.Endpoint].ID], sample: sdk.Sample{
		Request: pc.Request, EndpointID: p.ID, State: p.State, Predicted: pre.Predicted, DispatchedAt: pc.Now}}
	if err := s.record(v, n, c, dec, now); err != nil {
		return err
	}
	o := &s.outcomes[n]
	o.Prefill, o.Predicted = p.ID, pre.Predicted // the client's latency: both hops
	return nil
}

// prefilled handles a prefill hop's event: at its answer (its one token) the prefill hop teaches
// the producer its latency and ends, and the decode hop goes to its server, its clock starting.
func (s *sim) prefilled(ev engine.Event) error {
	n := int(ev.ID - prefillBase)
	h := s.hops[n]
	if h == nil || ev.Kind != engine.Finish {
		return nil
	}
	s.hops[n] = nil
	h.tracked.FirstToken(Epoch.Add(ev.Time))
	h.tracked.Finish()
	if h.replica.Observe != nil {
		smp := h.sample
		smp.ActualTTFTMs = float64(Epoch.Add(ev.Time).Sub(smp.DispatchedAt)) / float64(time.Millisecond)
		h.replica.Observe(smp, Epoch.Add(ev.Time))
	}
	dr := s.engineRequest(n)
	dr.RemotePrefill = true
	if err := s.engines[h.decode].Add(dr, ev.Time); err != nil {
		return fmt.Errorf("dispatching request %d's decode: %w", s.reqs[n].ID, err)
	}
	if f := s.flights[n]; f != nil {
		f.sample.DispatchedAt = Epoch.Add(ev.Time) // the decode hop's TTFT runs from its own request
	}
	return nil
}
