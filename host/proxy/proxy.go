package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/kvindex"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// statusClientClosed is the access log's status of a request whose client went away before an
// answer (nginx's 499).
const statusClientClosed = 499

// exchange is one client request on its way through the proxy.
type exchange struct {
	client   context.Context // the client's request: done when it goes away
	req      *openai.Request
	prompt   *promptKeys // the prompt's prefix blocks, hashed once for its cycles and its answer
	meta     meta
	cycle    *sdk.Cycle
	trace    *pipeline.Trace
	received time.Time
	body     []byte        // the upstream request, encoded before the decision
	first    *attempt      // the dispatch to the trace's first endpoint, recorded by its decision round
	queued   time.Duration // how long it waited in the flow control queue
	dropped  string        // the reason label when flow control answered it itself
	// modelRule is the InferenceModelRewrite rule that chose the model the request is sent as
	// ("" when the header chose it or it was not rewritten: rewrite.go).
	modelRule string
	// split is the prefill side of a request sent as two hops (disagg.go); nil when it goes whole.
	split *split
	// whole is the request as dispatched whole, when its cycle decided a decode hop (request).
	whole sdk.Request
}

// attempt is one endpoint tried for an exchange.
type attempt struct {
	// req is the request as it was dispatched: its hop says what the endpoint serves of it, and
	// its samples carry it.
	req        *sdk.Request
	ep         sdk.Endpoint
	flight     *stateplane.Flight // in the ledger and the prefix index, and shared with the peers
	held       *kvindex.Hold      // its prompt, counted cached on ep until it ends (nil: none)
	dispatched time.Time
}

// outcome is what the access log and the producer learn of a finished exchange.
type outcome struct {
	status     int
	endpoint   string
	attempts   int
	ttft, tpot float64 // ms; 0 when not observed
	usage      *openai.Usage
	e2e        time.Duration
	err        string
	predicted  sdk.Prediction
	// beyond says why the proxy went on beyond the pipeline's order ("" when it did not), and
	// beyondIDs are the endpoints it tried there.
	beyond    string
	beyondIDs []string
	// prefill is the endpoint that served the prefill hop ("" when none did) and prefillFailures
	// the prefill attempts that failed before it or instead of it.
	prefill         string
	prefillFailures []string
}

// proxy sends the exchange to the picked endpoints in order, at most server.maxAttempts of them
// and each at most once, until one answers, and relays the answer. An attempt that fails before
// the client got any byte of an answer moves on to the next endpoint; a failure after that ends
// the client's answer (attempt.go). When every picked endpoint failed so and server.maxAttempts
// allows more, it goes on beyond the pipeline's order (see beyond), and says so in the trace.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, x *exchange) {
	ctx, cancel := context.WithTimeout(r.Context(), s.o.UpstreamTimeout)
	defer cancel()
	var failures []string
	out := outcome{}
	if x.split != nil {
		s.prefillFirst(ctx, x, &out)
		if b := x.debugTrace(); b != nil {
			w.Header().Set(HeaderDecision, string(b))
		}
	}
	eps := make([]sdk.Endpoint, 0, len(x.trace.Order))
	for _, idx := range x.trace.Order {
		eps = append(eps, x.trace.Candidates[idx]) // the cycle's endpoint with the producer's prediction
	}
	picked, widened := len(eps), false
	for i := 0; i < s.o.MaxAttempts; i++ {
		if i == len(eps) {
			if widened {
				break
			}
			widened = true
			more := s.beyond(x, eps)
			if len(more) == 0 {
				break
			}
			eps = append(eps, more...)
			out.beyond = fmt.Sprintf("the %d endpoints of the pipeline's order failed before the first byte and server.maxAttempts is %d", picked, s.o.MaxAttempts)
		}
		ep := eps[i]
		out.attempts++
		a := x.first
		if i > 0 {
			a = s.dispatch(x.request(), ep, x.prompt)
		}
		if i >= picked {
			out.beyondIDs = append(out.beyondIDs, ep.ID)
		}
		err := s.try(ctx, w, x, a, &out)
		s.endFlight(a)
		switch {
		case err == nil: // answered: out says how
		case shuttingDown(x.client): // the router's grace ended before an answer (shutdown.go)
			e := ShutdownError()
			out.status, out.err = e.Status, ErrShuttingDown.Error()
			openai.WriteError(w, e)
		case x.client.Err() != nil: // the client left: nothing to answer
			out.status, out.err = statusClientClosed, "client went away"
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			out.status, out.err = http.StatusGatewayTimeout, "upstream timeout"
			openai.WriteError(w, &openai.Error{Status: out.status, Type: openai.TypeTimeout,
				Message: fmt.Sprintf("endpoint %s did not answer within %v (server.upstreamTimeout)", ep.ID, s.o.UpstreamTimeout)})
		default:
			failures = append(failures, ep.ID+": "+err.Error())
			continue
		}
		s.finish(x, &out)
		return
	}
	out.status, out.err = http.StatusBadGateway, strings.Join(failures, "; ")
	openai.WriteError(w, &openai.Error{Status: out.status, Type: openai.TypeServer, Code: "upstream_failed",
		Message: fmt.Sprintf("no answer from the %d endpoints tried: %s", len(failures), out.err)})
	s.finish(x, &out)
}

// beyond returns the endpoints an exchange whose picked endpoints all failed before the first
// byte may still go to: the endpoints of a cycle built now (in the rotation, serving the model,
// under server.maxInflightPerEndpoint), whether the filters kept them or not, but those in tried;
// the fewest requests in flight first, then in the endpoint set's order (leastLoaded). One the
// decision's cycle had keeps the producer's prediction.
func (s *Server) beyond(x *exchange, tried []sdk.Endpoint) []sdk.Endpoint {
	c, _, _, _ := s.cycle(x.req, x.prompt, x.meta, s.o.Now(), scope{anyModel: x.trace.UnknownModel})
	out := slices.DeleteFunc(c.Endpoints, func(e sdk.Endpoint) bool {
		return slices.ContainsFunc(tried, func(t sdk.Endpoint) bool { return t.ID == e.ID })
	})
	for i := range out {
		if j := slices.IndexFunc(x.trace.Candidates, func(e sdk.Endpoint) bool { return e.ID == out[i].ID }); j >= 0 {
			out[i].Prediction = x.trace.Candidates[j].Prediction
		}
	}
	return leastLoaded(out)
}

// markBeyond records in the decision's trace that the exchange went on beyond the pipeline's
// order: in a copy, which takes the original's place among the kept decisions (readers may hold
// the original).
func (s *Server) markBeyond(x *exchange, out *outcome) {
	t := *x.trace
	t.BeyondOrder, t.BeyondReason = out.beyondIDs, out.beyond
	s.decisions.replace(x.trace, &t)
	x.trace = &t
}

// dispatch records the request as in flight on ep and in ep's prefix index. The ledger takes the
// dispatch time from the endpoint set's clock, the one its scrape times are on. What ep computes
// follows its hop: a decode hop no prompt token, a prefill hop one output token. The decode
// endpoint a prefill decision picks to serve the request whole has it already: nothing more is
// recorded (decidePrefill counts its prompt there). With KV events, the prompt pk is held in
// ep's record of them until the attempt ends (kvindex.Hold); pk is nil for an opaque request.
func (s *Server) dispatch(r *sdk.Request, ep sdk.Endpoint, pk *promptKeys) *attempt {
	if d := &r.Disaggregation; d.Hop == sdk.HopPrefill && ep.ID == d.DecodeEndpoint {
		return &attempt{req: r, ep: ep, dispatched: s.o.Now()}
	}
	uncached := uncachedOn(r, &ep)
	output := r.MaxOutputTokens
	if output <= 0 {
		output = defaultOutputTokens
	}
	switch r.HopOn(ep.ID) {
	case sdk.HopDecode:
		uncached = 0
	case sdk.HopPrefill:
		output = 1
	}
	f := s.acct.Dispatch(ep.ID, inflight.Request{ID: r.ID, PrefillTokens: uncached, OutputTokens: output,
		TPOTSLOMs: r.SLO.TPOTMs, DispatchedAt: s.o.Endpoints.Config().Now()}, r.PrefixBlockHashes)
	if s.o.EndpointMetrics != nil {
		s.o.EndpointMetrics.Dispatched(ep.ID)
	}
	return &attempt{req: r, ep: ep, flight: f, held: s.hold(ep.ID, pk), dispatched: s.o.Now()}
}

// uncachedOn is the part of r's prompt ep is not believed to cache: what it computes of a whole
// request or a prefill hop.
func uncachedOn(r *sdk.Request, ep *sdk.Endpoint) int64 {
	return int64(float64(r.InputTokens) * (1 - ep.State.PrefixMatch))
}

// defaultOutputTokens is the ledger's expectation of a request without max_tokens.
const defaultOutputTokens = 256

// recordOutcome gives the experiment that decided t the request's outcome. A request answered
// 429 or 5xx failed (shed included: it was not served); one whose client left (499) counts with
// what was observed.
func (s *Server) recordOutcome(t *pipeline.Trace, status int, ttft, tpot, e2e float64, slo sdk.SLO) {
	if s.o.Outcomes == nil || t == nil || t.Experiment == "" {
		return
	}
	s.o.Outcomes.Record(t, experiment.Outcome{TTFTMs: ttft, TPOTMs: tpot, E2EMs: e2e, SLOTTFTMs: slo.TTFTMs, SLOTPOTMs: slo.TPOTMs,
		Failed: status == http.StatusTooManyRequests || status >= 500})
}

// recordAnswer notes that a's endpoint now caches the prompt followed by the answer: the prompt's
// blocks where a's dispatch recorded them, and the answer's hashed on from where the prompt's
// hashing stopped, neither the prompt copied nor hashed again.
func (s *Server) recordAnswer(a *attempt, x *exchange, answer string) {
	if answer == "" || x.prompt == nil { // nil: a request the router does not read
		return
	}
	a.flight.Answer(x.prompt.text.Extend(nil, x.req.AnswerText(answer)))
}

// observe sends the producer one measure of a streamed request, taken at at: its TTFT at the
// first token, so the producer learns while the answer still decodes, and its TPOT when the
// stream ends (see sdk.Sample). The sample carries the request, the endpoint's state and the
// prediction as they were at dispatch. A whole (non-streamed) answer has no first token to time.
func (s *Server) observe(x *exchange, a *attempt, measured sdk.Sample, at time.Time) {
	if s.o.Samples == nil {
		return
	}
	smp := measured
	smp.Request = *a.req
	smp.Request.PrefixBlockHashes = nil // the producer does not read them
	smp.EndpointID, smp.State, smp.Predicted, smp.DispatchedAt = a.ep.ID, a.ep.State, a.ep.Prediction, a.dispatched
	s.o.Samples.Add(context.Background(), smp, at)
}

// finish records the exchange in the metrics and the experiment, and writes its access line.
func (s *Server) finish(x *exchange, out *outcome) {
	if len(out.beyondIDs) > 0 {
		s.markBeyond(x, out)
	}
	x.twoHops(out)
	slo := x.cycle.Request.SLO
	s.recordOutcome(x.trace, out.status, out.ttft, out.tpot, ms(out.e2e), slo)
	if s.o.Metrics != nil {
		s.o.Metrics.Observe(metrics.Request{Code: out.status, TTFTMs: out.ttft, TPOTMs: out.tpot, E2EMs: ms(out.e2e),
			PredictedTTFTMs: out.predicted.TTFTMs, PredictedTPOTMs: out.predicted.TPOTMs,
			SLOTTFTMs: slo.TTFTMs, SLOTPOTMs: slo.TPOTMs, Arm: x.trace.Arm})
	}
	ev := s.o.Log.Info()
	if out.status >= 500 || out.err != "" {
		ev = s.o.Log.Warn()
	}
	ev = ev.Str("request_id", x.meta.id).Str("model", openai.Clip(x.req.Model))
	if x.req.ClientModel != x.req.Model {
		ev = ev.Str("client_model", openai.Clip(x.req.ClientModel))
	}
	if x.modelRule != "" {
		ev = ev.Str("model_rule", x.modelRule)
	}
	if x.meta.profile != "" {
		ev = ev.Str("profile", x.meta.profile).Str("profile_rule", x.meta.profileRule)
	}
	if x.meta.objective != "" {
		ev = ev.Str("objective", openai.Clip(x.meta.objective))
	}
	ev = ev.Str("endpoint", out.endpoint).
		Int("status", out.status).Int("attempts", out.attempts).Bool("stream", x.req.Stream).
		Float64("e2e_ms", ms(out.e2e)).Float64("total_ms", ms(s.o.Now().Sub(x.received)))
	if x.queued > 0 {
		ev = ev.Float64("queued_ms", ms(x.queued))
	}
	if out.predicted.Valid {
		ev = ev.Float64("predicted_ttft_ms", out.predicted.TTFTMs).Float64("predicted_tpot_ms", out.predicted.TPOTMs)
	}
	if out.ttft > 0 {
		ev = ev.Float64("ttft_ms", out.ttft)
	}
	if out.tpot > 0 {
		ev = ev.Float64("tpot_ms", out.tpot)
	}
	if u := out.usage; u != nil {
		ev = ev.Int64("prompt_tokens", u.PromptTokens).Int64("completion_tokens", u.CompletionTokens).Int64("cached_tokens", u.CachedTokens)
	}
	if len(out.beyondIDs) > 0 {
		ev = ev.Strs("beyond_order", out.beyondIDs)
	}
	if x.trace.Split != "" {
		ev = ev.Str("split", x.trace.Split)
	}
	if out.prefill != "" {
		ev = ev.Str("prefill_endpoint", out.prefill)
		if !x.split.delegated { // a gateway's sidecar ran it: the router did not time it
			ev = ev.Float64("prefill_ms", ms(x.split.took))
		}
	}
	if len(out.prefillFailures) > 0 {
		ev = ev.Strs("prefill_failures", out.prefillFailures)
	}
	if x.trace.LoadOnly {
		ev = ev.Bool("load_only", true)
	}
	if out.err != "" {
		ev = ev.Str("error", out.err)
	}
	ev.Msg("request")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
