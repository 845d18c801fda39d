package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// statusClientClosed is the access log's status of a request whose client went away before an
// answer (nginx's 499).
const statusClientClosed = 499

// maxWholeBytes bounds a non-streamed upstream response the router reads to measure it.
const maxWholeBytes = 64 << 20

// exchange is one client request on its way through the proxy.
type exchange struct {
	client   context.Context // the client's request: done when it goes away
	req      *openai.Request
	meta     meta
	cycle    *sdk.Cycle
	trace    *pipeline.Trace
	received time.Time
	body     []byte   // the upstream request, encoded before the decision
	first    *attempt // the dispatch to the trace's first endpoint, recorded by its decision round
}

// attempt is one endpoint tried for an exchange.
type attempt struct {
	ep         sdk.Endpoint
	flight     *inflight.Flight
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
}

// proxy sends the exchange to the picked endpoints in order until one answers, and relays the
// answer. A connection failure before any byte of a response moves on to the next endpoint;
// anything later is the client's answer.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, x *exchange) {
	ctx, cancel := context.WithTimeout(r.Context(), s.o.UpstreamTimeout)
	defer cancel()
	var failures []string
	out := outcome{}
	for i, idx := range x.trace.Order {
		ep := x.trace.Candidates[idx] // the cycle's endpoint with the producer's prediction
		out.attempts++
		a := x.first
		if i > 0 {
			a = s.dispatch(&x.cycle.Request, ep)
		}
		resp, err := s.send(ctx, ep.ID, x, x.body)
		if err != nil {
			a.flight.Finish()
			if r.Context().Err() != nil { // the client left: nothing to answer
				out.status, out.err = statusClientClosed, "client went away"
				s.finish(x, &out)
				return
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				out.status = http.StatusGatewayTimeout
				out.err = "upstream timeout"
				openai.WriteError(w, &openai.Error{Status: out.status, Type: "timeout",
					Message: fmt.Sprintf("endpoint %s did not answer within %v (server.upstreamTimeout)", ep.ID, s.o.UpstreamTimeout)})
				s.finish(x, &out)
				return
			}
			s.o.Endpoints.ReportFailure(ep.ID, err)
			failures = append(failures, ep.ID+": "+err.Error())
			continue
		}
		s.o.Endpoints.ReportSuccess(ep.ID)
		out.endpoint, out.predicted = ep.ID, ep.Prediction
		s.relay(w, resp, x, a, &out)
		a.flight.Finish()
		s.finish(x, &out)
		return
	}
	out.status, out.err = http.StatusBadGateway, strings.Join(failures, "; ")
	openai.WriteError(w, &openai.Error{Status: out.status, Type: "server_error",
		Message: "no picked endpoint could be reached: " + out.err})
	s.finish(x, &out)
}

// dispatch records the request as in flight on ep and in ep's prefix index. The ledger takes the
// dispatch time from the endpoint set's clock, the one its scrape times are on.
func (s *Server) dispatch(r *sdk.Request, ep sdk.Endpoint) *attempt {
	uncached := int64(float64(r.InputTokens) * (1 - ep.State.PrefixMatch))
	output := r.MaxOutputTokens
	if output <= 0 {
		output = defaultOutputTokens
	}
	f := s.inflight.Dispatch(ep.ID, inflight.Request{ID: r.ID, PrefillTokens: uncached, OutputTokens: output,
		TPOTSLOMs: r.SLO.TPOTMs, DispatchedAt: s.o.Endpoints.Config().Now()})
	s.prefix.Record(ep.ID, r.PrefixBlockHashes)
	if s.o.EndpointMetrics != nil {
		s.o.EndpointMetrics.Dispatched(ep.ID)
	}
	return &attempt{ep: ep, flight: f, dispatched: s.o.Now()}
}

// defaultOutputTokens is the ledger's expectation of a request without max_tokens.
const defaultOutputTokens = 256

// send posts the body to the endpoint; an error means no response arrived.
func (s *Server) send(ctx context.Context, id string, x *exchange, body []byte) (*http.Response, error) {
	st, ok := s.o.Endpoints.Get(id)
	if !ok {
		return nil, fmt.Errorf("endpoint %s left the fleet", id)
	}
	path := "/v1/completions"
	if x.req.Kind == openai.Chat {
		path = "/v1/chat/completions"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.BaseURL()+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderRequestID, x.meta.id)
	return s.client.Do(req)
}

// relay writes the endpoint's answer to the client and measures it.
func (s *Server) relay(w http.ResponseWriter, resp *http.Response, x *exchange, a *attempt, out *outcome) {
	defer resp.Body.Close()
	out.status = resp.StatusCode
	for _, h := range []string{"Content-Type", "Cache-Control"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	if resp.StatusCode != http.StatusOK { // the engine's own error, passed through as it is
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(resp.Body, maxWholeBytes))
		out.err = "endpoint answered " + resp.Status
		return
	}
	if x.req.Stream {
		s.relayStream(w, resp, x, a, out)
		return
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWholeBytes))
	out.e2e = s.o.Now().Sub(a.dispatched)
	if err != nil {
		out.status, out.err = http.StatusBadGateway, "reading the answer: "+err.Error()
		openai.WriteError(w, &openai.Error{Status: out.status, Type: "server_error", Message: "endpoint " + a.ep.ID + " broke off its answer: " + err.Error()})
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	answer, usage, err := openai.ReadWhole(x.req.Kind, data)
	if err != nil {
		out.err = "unreadable answer: " + err.Error()
		return
	}
	out.usage = usage
	s.recordAnswer(a.ep.ID, x, answer)
}

// relayStream streams the SSE answer through, without the usage chunk the client did not ask for.
func (s *Server) relayStream(w http.ResponseWriter, resp *http.Response, x *exchange, a *attempt, out *outcome) {
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	w.WriteHeader(http.StatusOK)
	flush()
	first := func(at time.Time) {
		a.flight.FirstToken(at)
		s.observe(x, a, sdk.Sample{ActualTTFTMs: ms(at.Sub(a.dispatched))}, at)
	}
	res, err := openai.Relay(w, resp.Body, openai.RelayOptions{Flush: flush, HideUsage: x.req.HiddenUsage(), Now: s.o.Now,
		OnFirst: first, OnTokens: a.flight.Tokens, FlushEvery: s.o.StreamFlushInterval})
	out.e2e = s.o.Now().Sub(a.dispatched)
	if err != nil {
		out.err = "stream: " + err.Error()
		if x.client.Err() != nil {
			out.status, out.err = statusClientClosed, "client went away mid-answer"
		}
	}
	out.usage = res.Usage
	if !res.FirstContent.IsZero() {
		out.ttft = ms(res.FirstContent.Sub(a.dispatched))
		if res.Usage != nil && res.Usage.CompletionTokens >= 2 && res.Last.After(res.FirstContent) {
			out.tpot = ms(res.Last.Sub(res.FirstContent)) / float64(res.Usage.CompletionTokens-1)
		}
	}
	if err == nil {
		s.recordAnswer(a.ep.ID, x, res.Answer)
		if out.tpot > 0 {
			s.observe(x, a, sdk.Sample{ActualTPOTMs: out.tpot, OutputTokens: res.Usage.CompletionTokens}, s.o.Now())
		}
	}
}

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

// recordAnswer notes that the endpoint now caches the prompt followed by the answer.
func (s *Server) recordAnswer(id string, x *exchange, answer string) {
	if answer == "" {
		return
	}
	known := slices.Clip(x.cycle.Request.PrefixBlockHashes) // the prompt's, hashed for the cycle
	s.prefix.Record(id, openai.ExtendBlocks(known, x.req.Prompt+x.req.AnswerText(answer)))
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
	smp.Request = x.cycle.Request
	smp.Request.PrefixBlockHashes = nil // the producer does not read them
	smp.EndpointID, smp.State, smp.Predicted, smp.DispatchedAt = a.ep.ID, a.ep.State, a.ep.Prediction, a.dispatched
	s.o.Samples.Add(context.Background(), smp, at)
}

// finish records the exchange in the metrics and the experiment, and writes its access line.
func (s *Server) finish(x *exchange, out *outcome) {
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
	ev = ev.Str("request_id", x.meta.id).Str("model", x.req.Model).Str("endpoint", out.endpoint).
		Int("status", out.status).Int("attempts", out.attempts).Bool("stream", x.req.Stream).
		Float64("e2e_ms", ms(out.e2e)).Float64("total_ms", ms(s.o.Now().Sub(x.received)))
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
	if out.err != "" {
		ev = ev.Str("error", out.err)
	}
	ev.Msg("request")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
