package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Routed is a request decided for a data plane that sends it to the endpoint itself: a gateway
// that asks the router over Envoy's external processing protocol which endpoint serves it
// (host/extproc). The router keeps the same account of it as of a request it proxies — in flight
// on its endpoint until Finish, in the endpoint's prefix index, the producer's samples taken from
// the answer the gateway shows it, outlier detection, the metrics, the experiment's outcome and
// the access line — so both fronts share one view of the fleet. A Routed is used by one
// goroutine at a time.
type Routed struct {
	s         *Server
	x         *exchange
	a         *attempt
	body      []byte // what the data plane sends upstream
	hideUsage bool   // the body asks for the stream's usage, which the client did not
	fellBack  bool   // a fallback endpoint served it: its TTFT includes the failed attempts
	status    int    // the answer's status, once its headers came
	broken    error  // the answer broke off after it began
	complete  bool   // the whole answer went through Relay or Whole
	opaque    bool   // a load-only pick whose answer the router does not read (RouteOpaque)
	out       outcome
	done      bool
}

// Refusal is a request the router answers itself, already recorded in the metrics and the access
// log; the front sends Err.
type Refusal struct {
	Err       *openai.Error
	RequestID string // "" when the headers were not read
	Decision  []byte // the decision trace as JSON when the request asked for it (x-foresight-debug: 1)
	// Dropped is the reason label when flow control answered the request itself (its TTL ran
	// out, its band was full, no endpoint): the answer carries it in HeaderDroppedReason and
	// HeaderDroppedReasonAlias. "" otherwise.
	Dropped string
}

// Refuse records a request the front answers itself with e before Route (over the concurrency
// bound, oversized, not a completion).
func (s *Server) Refuse(e *openai.Error) { s.refused(nil, e) }

// Route parses and decides a request that the data plane will send to an endpoint: what the
// proxy does before it sends one. The caller counted the request with Enter and checked its
// headers with CheckHeaders. only, when non-nil, restricts the candidates to the endpoints it
// accepts (a gateway's subset hint). rewrite says that the data plane sends Body — the request
// as the proxy sends it, with a stream's usage asked for, which Relay then hides from the client
// — rather than the client's body as it came (when the front cannot edit the answer).
func (s *Server) Route(ctx context.Context, kind openai.Kind, h http.Header, body []byte, received time.Time, only func(endpoints.Endpoint) bool, rewrite bool) (*Routed, *Refusal) {
	x, e := s.decideRequest(ctx, kind, h, body, received, scope{only: only, anyModel: s.anyModel(true)})
	if e != nil {
		s.refused(x, e)
		ref := &Refusal{Err: e}
		if x != nil {
			ref.RequestID, ref.Decision, ref.Dropped = x.meta.id, x.debugTrace(), x.dropped
		}
		return nil, ref
	}
	x.delegate()
	r := &Routed{s: s, x: x, a: x.first, body: body}
	if rewrite {
		r.body, r.hideUsage = x.body, x.req.HiddenUsage()
	}
	r.out.attempts = 1
	return r, nil
}

// RequestID is the request's x-request-id, the client's or the router's.
func (r *Routed) RequestID() string { return r.x.meta.id }

// Decision is the decision trace as JSON when the request asked for it (x-foresight-debug: 1).
func (r *Routed) Decision() []byte { return r.x.debugTrace() }

// Kind is the API the request came to (its body read as that kind's).
func (r *Routed) Kind() openai.Kind { return r.x.req.Kind }

// Streaming reports whether the client asked for a streamed answer.
func (r *Routed) Streaming() bool { return r.x.req.Stream }

// Body is the request the data plane sends upstream.
func (r *Routed) Body() []byte { return r.body }

// Destinations are the picked endpoints' host:port, the first choice first and then the fallbacks
// the data plane may try when it fails, at most server.maxAttempts in all.
func (r *Routed) Destinations() []string {
	var out []string
	for _, idx := range r.x.trace.Order {
		if len(out) == r.s.o.MaxAttempts {
			break
		}
		if st, ok := r.s.o.Endpoints.Get(r.x.trace.Candidates[idx].ID); ok {
			out = append(out, st.HostPort())
		}
	}
	return out
}

// Served notes the endpoint (host:port) the data plane says served the request. When it is not
// the first choice, the data plane failed over: the first choice's attempt ends as failed and the
// fallback's begins, dated from the decision, since the router does not see when the data plane
// moved on. An endpoint the router did not pick is logged and otherwise ignored.
func (r *Routed) Served(hostport string) {
	if hostport == "" || r.done || r.hostPort(r.a.ep.ID) == hostport {
		return
	}
	for _, idx := range r.x.trace.Order {
		ep := r.x.trace.Candidates[idx]
		if r.hostPort(ep.ID) != hostport {
			continue
		}
		r.s.endFlight(r.a)
		r.s.o.Endpoints.ReportRequest(r.a.ep.ID, errors.New("the gateway failed over to the next endpoint"))
		dispatched := r.a.dispatched
		r.a = r.s.dispatch(r.x.request(), ep, r.x.prompt)
		r.a.dispatched = dispatched
		r.fellBack = true
		r.out.attempts++
		return
	}
	r.s.o.Log.Warn().Str("request_id", r.x.meta.id).Str("served_by", openai.Clip(hostport)).Str("picked", r.a.ep.ID).
		Msg("the gateway says an endpoint the router did not pick served the request; the request is counted on the pick")
}

func (r *Routed) hostPort(id string) string {
	if st, ok := r.s.o.Endpoints.Get(id); ok {
		return st.HostPort()
	}
	return ""
}

// Status notes the status of the answer's headers.
func (r *Routed) Status(code int) { r.status = code }

// Relay passes a 200 streamed answer from src to dst as the proxy relays one (openai.Relay): it
// times the first token and the tokens after it for the producer and the in-flight ledger, hides
// the usage the client did not ask for, and records the answer in the prefix index. It returns
// Relay's error; one reading src is the stream breaking off (a 502 in the access log), one writing
// dst the client going away. A stream that ends without "data: [DONE]" gets the proxy's error
// event (upstream_stream_broken) written after it and counts as failed (a 502) too.
func (r *Routed) Relay(dst io.Writer, src io.Reader) error {
	x, a, s := r.x, r.a, r.s
	first := func(at time.Time) {
		a.flight.FirstToken(at)
		if x.split != nil && x.split.delegated { // the TTFT holds the sidecar's prefill hop
			r.prefillDone(at, at.Sub(a.dispatched))
			return
		}
		if !r.fellBack {
			s.observe(x, a, sdk.Sample{ActualTTFTMs: ms(at.Sub(a.dispatched))}, at)
		}
	}
	res, err := openai.Relay(dst, src, openai.RelayOptions{Kind: x.req.Kind, Rename: x.rename(), HideUsage: r.hideUsage,
		Now: s.o.Now, OnFirst: first, OnTokens: a.flight.Tokens})
	r.out.e2e = s.o.Now().Sub(a.dispatched)
	r.complete = res.Done // a stream that ends cleanly without [DONE] was cut all the same
	s.measureStream(x, a, res, &r.out, r.complete, !r.fellBack)
	var source *openai.SourceError
	switch {
	case r.complete:
	case err == nil:
		r.broken = fmt.Errorf("the stream ended after %d content chunks: %w", res.Chunks, errNoDone)
		_ = openai.WriteStreamError(dst, x.req.Kind, brokenStream(a.ep.ID, res.Chunks, nil), res.Partial)
	case errors.As(err, &source):
		r.broken = fmt.Errorf("the stream broke off after %d content chunks: %w", res.Chunks, err)
	default:
		r.broken = errClientGone
	}
	return err
}

// errClientGone is a Routed's answer that the client stopped reading.
var errClientGone = errors.New("client went away mid-answer")

// Whole measures a 200 non-streamed answer, as the proxy does: its usage, its end-to-end time
// and its text in the prefix index. An answer that is not an OpenAI one counts as failed. An
// opaque request's answer is not read: only its end-to-end time is kept.
func (r *Routed) Whole(data []byte) {
	r.out.e2e = r.s.o.Now().Sub(r.a.dispatched)
	if r.opaque {
		return
	}
	answer, usage, err := openai.ReadWhole(r.x.req.Kind, data)
	if err != nil {
		r.broken = fmt.Errorf("answered 200 with what is not an OpenAI answer: %w", err)
		return
	}
	r.out.usage, r.complete = usage, true
	r.s.recordAnswer(r.a, r.x, answer)
	r.s.measureWhole(r.x, r.a, r.out.e2e, !r.fellBack)
}

// Rename is what the answer's model goes through before the client sees it: the client's model
// back in place of the one the request was sent as (x-gateway-model-name-rewrite, the pool's
// InferenceModelRewrite); the zero rename when it was not rewritten.
func (r *Routed) Rename() openai.ModelRename {
	if r.opaque {
		return openai.ModelRename{}
	}
	return r.x.rename()
}

// Finish ends the request: its endpoint's attempt, outlier detection's report and the record of
// its outcome. cause says why the exchange ended early ("" when it ran its course); an answer
// whose headers never came is a 499. Finish is idempotent.
func (r *Routed) Finish(cause string) {
	if r.done {
		return
	}
	r.done = true
	out, id := &r.out, r.a.ep.ID
	out.endpoint, out.predicted = id, r.a.ep.Prediction
	switch {
	case errors.Is(r.broken, ErrShuttingDown): // Cut (shutdown.go)
		out.status, out.err = http.StatusServiceUnavailable, ErrShuttingDown.Error()
	case r.status == 0:
		out.status, out.err = statusClientClosed, cmp.Or(cause, "the exchange ended before the answer's headers")
	case r.status >= 500:
		out.status, out.err = r.status, fmt.Sprintf("endpoint answered %d", r.status)
		r.s.o.Endpoints.ReportRequest(id, errors.New(out.err))
	case errors.Is(r.broken, errClientGone):
		out.status, out.err = statusClientClosed, r.broken.Error()
	case r.broken != nil:
		out.status, out.err = http.StatusBadGateway, r.broken.Error()
		r.s.o.Endpoints.ReportRequest(id, r.broken)
	case r.status == http.StatusOK && !r.complete && cause != "":
		out.status, out.err = statusClientClosed, cause
	default:
		out.status = r.status
		if r.status != http.StatusOK {
			out.err = fmt.Sprintf("endpoint answered %d", r.status)
		}
		r.s.o.Endpoints.ReportRequest(id, nil)
	}
	r.prefillDone(time.Time{}, 0)
	r.s.endFlight(r.a)
	r.s.finish(r.x, out)
}
