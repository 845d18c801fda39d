package proxy

// A gateway's request the router does not read: a load-only pick, without the pipeline.

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// RouteOpaque decides, for a data plane that sends it on itself, a request whose body the router
// does not read: one without a body (GET /v1/models), or an API it does not parse. It skips the
// pipeline: a load-only pick among the endpoints in the rotation (those only accepts, when
// non-nil; with model, those listing it, or all of them under server.unknownModels' route), the
// fewest of the router's requests in flight first, ties in the endpoint set's order; the trace
// says load_only. The request is counted in flight on its endpoint until Finish, gets its access
// line and the request metrics, but no producer sample and no prefix record: the router does not
// read its answer (Opaque). body is what the data plane sends upstream, as it came; the caller
// counted the request with Enter and checked its headers with CheckHeaders.
func (s *Server) RouteOpaque(ctx context.Context, h http.Header, model string, body []byte, received time.Time, only func(endpoints.Endpoint) bool) (*Routed, *Refusal) {
	m, e := s.meta(h, "")
	if e != nil {
		s.refused(nil, e)
		return nil, &Refusal{Err: e}
	}
	x := &exchange{client: ctx, req: &openai.Request{Model: model}, meta: m, received: received}
	now := s.o.Now()
	c, states, full, unknown := s.cycle(x.req, nil, m, now, scope{only: only, anyModel: model == "" || s.anyModel(true)})
	x.cycle = c
	if len(c.Endpoints) == 0 {
		e := s.noEndpoint(model, states, full, only != nil)
		s.refused(x, e)
		return nil, &Refusal{Err: e, RequestID: m.id}
	}
	eps := leastLoaded(slices.Clone(c.Endpoints))
	order := make([]int, len(eps))
	for i := range order {
		order[i] = i
	}
	x.trace = &pipeline.Trace{RequestID: m.id, Now: now, Candidates: eps, Admitted: true, Order: order,
		LoadOnly: true, UnknownModel: unknown && model != ""}
	s.decisions.add(x.trace)
	x.first = s.dispatch(&c.Request, eps[0], nil)
	r := &Routed{s: s, x: x, a: x.first, body: body, opaque: true}
	r.out.attempts = 1
	return r, nil
}

// Opaque reports whether the router does not read the request's answer (RouteOpaque): the data
// plane passes it through, and neither Relay nor Whole applies.
func (r *Routed) Opaque() bool { return r.opaque }

// leastLoaded orders eps by the router's requests in flight on each, fewest first; ties keep
// their order in eps (the endpoint set's, a cycle's order). It sorts eps in place and returns it.
func leastLoaded(eps []sdk.Endpoint) []sdk.Endpoint {
	slices.SortStableFunc(eps, func(a, b sdk.Endpoint) int {
		return cmp.Compare(a.State.InflightRequests, b.State.InflightRequests)
	})
	return eps
}
