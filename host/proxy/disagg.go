package proxy

// Prefill/decode disaggregation (config disaggregation:). A request of a profile that splits is
// decided twice: first its decode endpoint, among the endpoints whose role decodes, on a cycle
// whose hop is sdk.HopDecode; then its prefill endpoint, on the prefill profile's pipeline, among
// the endpoints whose role prefills and — with split: adaptive — the decode endpoint itself, which
// would serve the request whole. The prefill cycle carries the decode pick and its predictions, so
// a producer can predict every candidate's latency as the client would see it, and the usual
// stages choose between two hops and one. The decision trace holds both decisions.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// split is the prefill side of a disaggregated exchange.
type split struct {
	trace *pipeline.Trace // the prefill decision
	cycle *sdk.Cycle      // its cycle
	first *attempt        // the dispatch to the prefill decision's first pick
	// params are the prefill answer's kv_transfer_params once a prefill hop succeeded, endpoint
	// the endpoint that answered, and took how long the hop took (which the client's TTFT
	// includes).
	params    json.RawMessage
	endpoint  string
	took      time.Duration
	predicted sdk.Prediction // the prefill decision's for endpoint: the client's latency, both hops
	// delegated: a gateway's sidecar runs the prefill hop (gateway_disagg.go); done once its
	// flight ended.
	delegated, done bool
}

// SetDisaggregation serves the disaggregation section d from the next request on (nil: every
// request whole); a reload calls it with the profiles d names.
func (s *Server) SetDisaggregation(d *config.Disaggregation) { s.pd.Store(d) }

// roleScope narrows sc to the endpoints whose role (label's value) accepts, and to also, when not
// "". An endpoint whose label names no role serves neither hop; the log says so once a minute.
func (s *Server) roleScope(sc scope, label string, accept func(endpoints.Role) bool, also string) scope {
	only := sc.only
	sc.only = func(e endpoints.Endpoint) bool {
		if only != nil && !only(e) {
			return false
		}
		role, err := endpoints.RoleOf(e.Labels, label)
		if err != nil && s.roleWarnings.first(e.ID, s.o.Now()) {
			s.o.Log.Warn().Str("endpoint", e.ID).Err(err).Msg("the endpoint serves neither prefill nor decode hops")
		}
		return accept(role) || e.ID == also
	}
	return sc
}

// disaggregate prepares a request's decode decision on a fleet with disaggregation, d (nil:
// none): its candidates are the endpoints that decode, and when its profile splits and its API
// can be split, its cycle's hop is the decode hop.
func (s *Server) disaggregate(p *pending, d *config.Disaggregation) {
	if d == nil {
		return
	}
	p.scope = s.roleScope(p.scope, d.RoleLabel, endpoints.Role.Decodes, "")
	if d.Splits(p.meta.profile) && p.req.Disaggregable() {
		p.meta.pd = sdk.Disaggregation{Hop: sdk.HopDecode}
	}
}

// decidePrefill decides where the decode hop on x's first pick gets its prefill, and records the
// decision in x's trace: on a prefill endpoint (x.split set) or on the decode endpoint itself, the
// request then served whole (x.split nil). A prefill decision with no pick — no endpoint prefills,
// its admitter refused, its client left — serves the request whole too: the decode endpoint was
// admitted and can compute the prompt itself.
// Without an endpoint in the rotation that prefills there is nothing to decide: a decision over
// the decode endpoint alone would pick it. (The decode decision's states hold the endpoints that
// decode only.)
func (s *Server) decidePrefill(x *exchange, sc scope, d *config.Disaggregation) {
	dec := x.first.ep
	if !anyRoutable(s.o.Endpoints.Snapshot(), s.roleScope(sc, d.RoleLabel, endpoints.Role.Prefills, "")) {
		s.serveWhole(x, nil, "the prefill decision has no pick: "+noPrefills)
		return
	}
	m := x.meta
	m.profile = d.PrefillProfileFor(x.meta.profile)
	m.pd, m.decodeMatch = sdk.Disaggregation{Hop: sdk.HopPrefill}, dec.State.PrefixMatch
	if dec.Prediction.Valid {
		m.pd.DecodeTTFTMs, m.pd.DecodeTPOTMs = dec.Prediction.TTFTMs, dec.Prediction.TPOTMs
	}
	also := ""
	if d.Split == config.SplitAdaptive {
		m.pd.DecodeEndpoint, also = dec.ID, dec.ID
	}
	p := &pending{ctx: x.client, req: x.req, prompt: x.prompt, meta: m, received: x.received,
		scope: s.roleScope(sc, d.RoleLabel, endpoints.Role.Prefills, also)}
	decided := s.decider.decide(p)
	t := x.trace
	t.Prefill = p.trace
	if p.trace != nil && s.o.Metrics != nil {
		s.o.Metrics.Decided(p.trace.Profile, p.trace.Outcome())
	}
	switch pick, ok := p.pick(); {
	case !decided || !ok:
		s.serveWhole(x, p, "the prefill decision has no pick: "+prefillMiss(decided, p))
	case pick.ID == dec.ID:
		s.serveWhole(x, p, "the prefill decision picked the decode endpoint")
		x.first.ep.Prediction = pick.Prediction // its prediction for the request whole
	default:
		t.Split = pipeline.SplitTwoHops
		x.split = &split{trace: p.trace, cycle: p.cycle, first: p.first}
	}
}

// noPrefills says why a request is served whole on a fleet none of whose endpoints in the
// rotation prefills.
const noPrefills = "no endpoint that prefills is in the rotation"

// anyRoutable reports whether one of states is in the rotation and in sc.
func anyRoutable(states []endpoints.State, sc scope) bool {
	for _, st := range states {
		if st.Routable() && sc.only(st.Endpoint) {
			return true
		}
	}
	return false
}

// prefillMiss says why a prefill decision picked nothing.
func prefillMiss(decided bool, p *pending) string {
	switch {
	case !decided:
		return "the client went away"
	case p.trace == nil:
		return noPrefills
	case !p.trace.Admitted:
		return "its admitter refused (" + p.trace.Reason + ")"
	}
	return p.trace.Reason
}

// serveWhole sends x whole to its decode endpoint: the decode flight counts the prompt, and the
// attempts to come are dispatched as whole requests. p is the prefill decision's request, nil
// when none was made.
func (s *Server) serveWhole(x *exchange, p *pending, why string) {
	x.trace.Split, x.trace.SplitReason = pipeline.SplitWhole, why
	if p != nil && p.first != nil && p.first.flight != nil { // a prefill dispatch on another endpoint than the decode one
		s.endFlight(p.first)
	}
	// When the decode endpoint was picked, its dispatch recorded nothing (dispatch): the decode
	// hop's flight serves for the whole request.
	x.goWhole()
}

// goWhole makes x's decode attempts whole requests (request), the first one's flight counting the
// prompt it now computes.
func (x *exchange) goWhole() {
	x.first.req = x.request()
	x.first.flight.Prefill(uncachedOn(x.first.req, &x.first.ep))
}

// request is the request x's decode attempts are dispatched as: the cycle's, or the whole
// request when no prefill hop precedes them.
func (x *exchange) request() *sdk.Request {
	if x.cycle.Request.Disaggregation.Hop == sdk.HopDecode && (x.split == nil || x.split.params == nil && !x.split.delegated) {
		if x.whole.ID == "" {
			x.whole = x.cycle.Request
			x.whole.Disaggregation = sdk.Disaggregation{}
		}
		return &x.whole
	}
	return &x.cycle.Request
}

// prefillHop runs x's prefill hop on the prefill decision's order, at most server.maxAttempts
// endpoints and never the decode endpoint (which would serve the request whole anyway), until one
// answers with kv_transfer_params. It returns the attempts' failures; x.split.params stays nil
// when none succeeded, and the request is then served whole on its decode endpoint.
func (s *Server) prefillHop(ctx context.Context, x *exchange) (failures []string) {
	sp := x.split
	body, err := x.req.PrefillBody()
	if err != nil {
		s.serveWholeAfter(x, "the prefill request could not be built: "+err.Error())
		return nil
	}
	start := s.o.Now()
	for i, idx := range sp.trace.Order {
		if i == s.o.MaxAttempts && s.o.MaxAttempts > 0 {
			break
		}
		ep := sp.trace.Candidates[idx]
		if ep.ID == x.first.ep.ID {
			break // the decode endpoint: from here on the request is better served whole
		}
		a := sp.first
		if i > 0 {
			a = s.dispatch(&sp.cycle.Request, ep, x.prompt)
		}
		params, err := s.prefillOn(ctx, x, a, body)
		s.endFlight(a)
		if err == nil {
			sp.params, sp.endpoint, sp.took, sp.predicted = params, ep.ID, s.o.Now().Sub(start), ep.Prediction
			return failures
		}
		failures = append(failures, "prefill on "+ep.ID+": "+err.Error())
		if x.client.Err() != nil || ctx.Err() != nil {
			break
		}
	}
	s.serveWholeAfter(x, fmt.Sprintf("every prefill attempt failed (%d)", len(failures)))
	return failures
}

// serveWholeAfter is serveWhole once the prefill hop failed: x's trace, kept among the decisions,
// is replaced by a copy that says so.
func (s *Server) serveWholeAfter(x *exchange, why string) {
	t := *x.trace
	t.Split, t.SplitReason = pipeline.SplitWhole, why
	s.decisions.replace(x.trace, &t)
	x.trace = &t
	x.goWhole()
}

// prefillOn sends the prefill hop to a's endpoint and returns its kv_transfer_params. It reports
// the attempt to outlier detection as try does, and teaches the producer the hop's latency: its
// whole answer is its first token.
func (s *Server) prefillOn(ctx context.Context, x *exchange, a *attempt, body []byte) (json.RawMessage, error) {
	params, err := s.prefillCall(ctx, x, a, body)
	switch {
	case x.client.Err() != nil:
	case err != nil:
		s.o.Endpoints.ReportRequest(a.ep.ID, err)
	default:
		s.o.Endpoints.ReportRequest(a.ep.ID, nil)
		now := s.o.Now()
		s.observe(x, a, sdk.Sample{ActualTTFTMs: ms(now.Sub(a.dispatched))}, now)
	}
	return params, err
}

// prefillCall is prefillOn without the reports: any answer but a 200 carrying kv_transfer_params
// is a failure, a 4xx included (an engine without a KV connector may refuse the parameters; the
// decode endpoint, serving the request whole, then answers for the request itself).
func (s *Server) prefillCall(ctx context.Context, x *exchange, a *attempt, body []byte) (json.RawMessage, error) {
	resp, err := s.send(ctx, a.ep.ID, x, body)
	if err != nil {
		s.o.Endpoints.ReportFailure(a.ep.ID, err)
		return nil, err
	}
	defer resp.Body.Close()
	s.o.Endpoints.ReportSuccess(a.ep.ID)
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWholeBytes))
	switch {
	case err != nil:
		return nil, fmt.Errorf("broke off its answer: %w", err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("answered %s: %s", resp.Status, bytes.TrimSpace(data[:min(len(data), maxErrorQuote)]))
	}
	return openai.PrefillAnswer(data)
}

// prefillFirst runs x's prefill hop before its decode attempts: when it succeeds, the decode
// attempts carry its kv_transfer_params and the decode hop's clock starts now; otherwise the
// request goes whole to its decode endpoint.
func (s *Server) prefillFirst(ctx context.Context, x *exchange, out *outcome) {
	out.prefillFailures = s.prefillHop(ctx, x)
	sp := x.split
	if sp.params == nil {
		return
	}
	body, err := x.req.DecodeBody(x.body, sp.params)
	if err != nil {
		sp.params = nil
		s.serveWholeAfter(x, "the decode request could not be built: "+err.Error())
		return
	}
	x.body, x.first.dispatched = body, s.o.Now()
	out.prefill = sp.endpoint
}

// twoHops makes what the metrics and the log say of a request sent as two hops the client's: its
// TTFT and end-to-end time run from the prefill request (a gateway's answer times them so
// already), and its prediction is the prefill decision's, which predicted both hops.
func (x *exchange) twoHops(out *outcome) {
	switch {
	case x.split == nil:
		return
	case x.split.delegated: // the gateway's answer timed both hops already
		out.predicted = x.split.predicted
		return
	case x.split.params == nil:
		return
	}
	if out.ttft > 0 {
		out.ttft += ms(x.split.took)
	}
	out.e2e += x.split.took
	out.predicted = x.split.predicted
}
