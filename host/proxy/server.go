// Package proxy is the live router's OpenAI-compatible front: it parses a client's request,
// builds the scheduling cycle from the fleet's scraped state, its own in-flight accounting and its
// prefix index, runs the pipeline, and proxies the request to the picked endpoint (failing over
// to the next when an attempt fails before the client got a byte), streaming the answer back
// while it measures TTFT and TPOT, feeds them to the producer, and keeps the decision trace.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/kvindex"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/prefix"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// Scheduler runs scheduling cycles: a *pipeline.Pipeline, or the router's *router.Pipelines, which
// swaps pipelines on reload.
type Scheduler interface {
	Run(ctx context.Context, c *sdk.Cycle) *pipeline.Trace
}

// Profiles is a Scheduler with scheduling profiles (the router's *router.Pipelines): Choose
// picks a request's profile from its headers, its objective's name and whether it carries an
// SLO, and names the rule that did (config.Config.ChooseProfile; a *config.ProfileError is
// answered 400); RunProfile runs a cycle on that profile's pipeline. A Scheduler that is not one
// runs every cycle on its one pipeline.
type Profiles interface {
	Choose(h http.Header, objective string, hasSLO bool) (profile, rule string, err error)
	RunProfile(ctx context.Context, profile string, c *sdk.Cycle) *pipeline.Trace
}

// Options configure a Server. Pipeline, Endpoints and Log are required.
type Options struct {
	Pipeline  Scheduler
	Endpoints *endpoints.Set
	// Samples batches streamed requests' samples (TTFT at first token, TPOT at the end) to the
	// producer; nil when the pipeline has none.
	Samples *feedback.Batcher
	// Priority maps an objective's name (x-llm-d-inference-objective, x-gateway-inference-objective)
	// to a priority; a name it does not know gets 0. Objectives lists the configured names for
	// the log's warning about an unknown one.
	Priority   func(name string) (int32, bool)
	Objectives []string
	// ModelRewrite, when set, names the model a request's body is to carry instead of the
	// client's, and the rule that chose it (the InferenceModelRewrite resources); ok false keeps
	// the client's. It overrides x-gateway-model-name-rewrite. Nil: none.
	ModelRewrite func(model string) (target, rule string, ok bool)
	// MaxBodyBytes bounds a request body (413 beyond), ReadBodyTimeout its reading (408 past it;
	// 0: no bound).
	MaxBodyBytes    int64
	ReadBodyTimeout time.Duration
	// MaxConcurrentRequests bounds the completion requests held at once (429 beyond; 0: no
	// bound); MaxInflightPerEndpoint leaves an endpoint with that many requests in flight out of
	// the cycle (0: no bound); MaxHeaders and MaxHeaderBytes bound a request's header fields and
	// their bytes (431 beyond; 0: no bound).
	MaxConcurrentRequests, MaxInflightPerEndpoint int
	MaxHeaders, MaxHeaderBytes                    int
	// ConnectTimeout bounds connecting to one endpoint; UpstreamTimeout a whole upstream exchange,
	// failovers included; FirstByteTimeout a streamed attempt's wait for its first event, past
	// which it fails over (0: no bound but UpstreamTimeout).
	ConnectTimeout, UpstreamTimeout, FirstByteTimeout time.Duration
	// MaxAttempts bounds the endpoints one request is sent to, the first included (0: every
	// picked endpoint).
	MaxAttempts int
	// UnknownModels is server.unknownModels: what a request for a model that no endpoint in the
	// rotation lists gets. config.UnknownModelsRoute: every endpoint in the rotation is its
	// candidate (the trace says unknown_model); config.UnknownModelsRefuse: 404 model_not_found.
	// "": route for a gateway's requests (Route), refuse for the OpenAI API's.
	UnknownModels string
	// Decisions is the size of the decision-trace ring (/debug/decisions).
	Decisions int
	// PrefixBlocks bounds each endpoint's prefix index until its engine reports num_gpu_blocks.
	PrefixBlocks int
	// KVEvents is the record the endpoints' KV-cache events keep (host/kvindex), which gives the
	// prefix match of an endpoint whose events are live instead of the router's own record, and
	// Tokenize turns a request's prompt into the engines' tokens to match it there
	// (host/tokenize): nil tokens without an error for a request it does not tokenize; an error
	// leaves that request to the router's own record. Both or neither; nil: every match is the
	// router's own record's.
	KVEvents *kvindex.Index
	Tokenize func(ctx context.Context, req *openai.Request) ([]uint32, error)
	// DecisionConcurrency is the most requests a decision round takes (decide.go); 0: twice the
	// endpoints. At 1 requests are decided one after the other.
	DecisionConcurrency int
	// StreamFlushInterval is server.streamFlushInterval: how long a stream's tokens after the
	// first may wait to be flushed together (0: none).
	StreamFlushInterval time.Duration
	// Outcomes receives every decided request's outcome for the experiment that decided it (the
	// live pipeline); nil records nothing.
	Outcomes interface {
		Record(t *pipeline.Trace, o experiment.Outcome)
	}
	// FlowControl is the flowControl section: when it is enabled, a request for which the pool is
	// saturated waits in the router (flow.go). Nil or disabled: requests are dispatched as decided.
	FlowControl *config.FlowControl
	// Disaggregation is the disaggregation section: requests of the profiles it splits go as a
	// prefill hop and a decode hop (disagg.go). Nil: every request goes whole. SetDisaggregation
	// replaces it.
	Disaggregation *config.Disaggregation
	// Metrics records every answered request, Stages every cycle's stage calls, EndpointMetrics
	// every dispatch to an endpoint, FlowMetrics the flow control queue; nil records nothing.
	FlowMetrics     *metrics.FlowControl
	Metrics         *metrics.Requests
	Stages          *metrics.Stages
	EndpointMetrics *metrics.Endpoints
	// State is the state plane this replica shares its requests in flight with (stateplane);
	// nil: the router is alone. New attaches it to the server's ledger and prefix index.
	State *stateplane.Plane
	Log   zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server is an http.Handler serving /v1/completions, /v1/chat/completions, /v1/models and
// /health. It is safe for concurrent use.
type Server struct {
	o         Options
	inflight  *inflight.Ledger
	prefix    *prefix.Index
	acct      *stateplane.Account // records dispatches in inflight and prefix, and shares them
	client    *http.Client
	decisions *ring
	mux       *openai.Mux
	decider   *decider
	flow      *flowGate                             // nil without flow control
	active    atomic.Int64                          // completion requests held (server.maxConcurrentRequests)
	pd        atomic.Pointer[config.Disaggregation] // the disaggregation section (disagg.go)
	// objectiveWarnings bounds the warnings about unknown objectives (headers.go), roleWarnings
	// those about role labels naming no role (disagg.go).
	objectiveWarnings, roleWarnings warnings
}

// New returns a server over o.
func New(o Options) (*Server, error) {
	if o.Pipeline == nil || o.Endpoints == nil {
		return nil, errors.New("server: a pipeline and an endpoint set are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Priority == nil {
		o.Priority = func(string) (int32, bool) { return 0, false }
	}
	o.Objectives = slices.Sorted(slices.Values(o.Objectives))
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = math.MaxInt
	}
	dialer := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		DialContext:           dialer.DialContext,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: o.UpstreamTimeout,
		DisableCompression:    true, // SSE must reach the client as it comes
	}
	s := &Server{o: o, inflight: inflight.New(), prefix: prefix.New(max(o.PrefixBlocks, 1)),
		client: &http.Client{Transport: transport}, decisions: newRing(max(o.Decisions, 1))}
	s.acct = stateplane.NewAccount(s.inflight, s.prefix, o.State)
	s.decider = &decider{s: s, limit: o.DecisionConcurrency, wake: make(chan struct{}, 1)}
	s.pd.Store(o.Disaggregation)
	var err error
	if s.flow, err = newFlowGate(s, o.FlowControl, o.FlowMetrics); err != nil {
		return nil, err
	}
	s.mux = openai.NewMux()
	s.mux.HandleFunc(http.MethodPost, "/v1/completions", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, openai.Completions) })
	s.mux.HandleFunc(http.MethodPost, "/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, openai.Chat) })
	s.mux.HandleFunc(http.MethodPost, "/v1/embeddings", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, openai.Embeddings) })
	s.mux.HandleFunc(http.MethodPost, "/v1/responses", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, openai.Responses) })
	s.mux.HandleFunc(http.MethodGet, "/v1/models", s.models)
	s.mux.HandleFunc(http.MethodGet, "/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Decisions returns the kept decision traces, oldest first.
func (s *Server) Decisions() []*pipeline.Trace { return s.decisions.all() }

// EndpointGauges returns every endpoint's health (endpoints.State.Serving: an endpoint failing
// every request is not healthy, though it may stay in the rotation), scraped gauges and the
// router's in-flight count, for metrics.Endpoints.
func (s *Server) EndpointGauges() []metrics.EndpointGauges {
	states := s.o.Endpoints.Snapshot()
	out := make([]metrics.EndpointGauges, 0, len(states))
	now := s.o.Now()
	for _, st := range states {
		var es sdk.EndpointState
		s.inflight.Fill(st.ID, now, st.ScrapedAt, &es)
		g := metrics.EndpointGauges{ID: st.ID, Healthy: st.Serving(), Ejected: st.Ejected, Ejections: st.Ejections,
			Inflight: es.InflightRequests, Waiting: st.Waiting, Running: st.Running, KVCacheUsage: st.KVCacheUsage,
			PrefixBlocks: s.prefix.Len(st.ID), Slots: -1}
		if s.flow != nil {
			g.Slots = int64(s.flow.slots.of(st.ID))
		}
		out = append(out, g)
	}
	return out
}

// Prune forgets what the router recorded of endpoints no longer in the fleet (their prefix
// index, the slots flow control's detector reported); call it after the endpoint list changed.
func (s *Server) Prune() {
	states := s.o.Endpoints.Snapshot()
	ids := make([]string, len(states))
	for i, st := range states {
		ids[i] = st.ID
	}
	s.prefix.Retain(ids)
	if s.flow != nil {
		s.flow.slots.retain(ids)
	}
}

// Close answers the requests still waiting in the flow control queue (503) and releases idle
// upstream connections.
func (s *Server) Close() {
	if s.flow != nil {
		s.flow.close()
	}
	s.client.CloseIdleConnections()
}

// endFlight ends an attempt's flight; a server may have room, so flow control's pump looks.
func (s *Server) endFlight(a *attempt) {
	a.flight.Finish()
	a.held.Release()
	if s.flow != nil {
		s.flow.kick()
	}
}

// models answers GET /v1/models with the union of the healthy endpoints' models.
func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range s.o.Endpoints.Models() {
		out.Data = append(out.Data, model{ID: id, Object: "model", OwnedBy: "foresight"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// serve handles one completion request end to end.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, kind openai.Kind) {
	received := s.o.Now()
	if e := s.Enter(); e != nil {
		s.refuse(w, nil, e)
		return
	}
	defer s.Leave()
	if e := s.CheckHeaders(r.Header); e != nil {
		s.refuse(w, nil, e)
		return
	}
	body, e := s.readBody(w, r)
	if e != nil {
		s.refuse(w, nil, e)
		return
	}
	x, e := s.decideRequest(r.Context(), kind, r.Header, body, received, scope{anyModel: s.anyModel(false)})
	if x != nil {
		w.Header().Set(HeaderRequestID, x.meta.id)
		if b := x.debugTrace(); b != nil && x.split == nil { // a split's, once its prefill hop ran (proxy)
			w.Header().Set(HeaderDecision, string(b))
		}
	}
	if e != nil {
		if x != nil && x.dropped != "" {
			w.Header().Set(HeaderDroppedReason, x.dropped)
			w.Header().Set(HeaderDroppedReasonAlias, x.dropped)
		}
		s.refuse(w, x, e)
		return
	}
	s.proxy(w, r, x)
}

// refuse answers the request with e and records the refusal; x is what is known of the request
// (nil before its body parsed).
func (s *Server) refuse(w http.ResponseWriter, x *exchange, e *openai.Error) {
	openai.WriteError(w, e)
	s.refused(x, e)
}

// refused records a request the router answered itself with e: in the metrics, the access log
// and, once the pipeline decided it, the outcome of the experiment arm that did.
func (s *Server) refused(x *exchange, e *openai.Error) {
	var id, model, arm, profile string
	if x != nil {
		id, model, profile = x.meta.id, x.req.Model, x.meta.profile
		if x.trace != nil {
			arm = x.trace.Arm
			s.recordOutcome(x.trace, e.Status, 0, 0, 0, sdk.SLO{})
		}
	}
	if s.o.Metrics != nil {
		s.o.Metrics.Observe(metrics.Request{Code: e.Status, Arm: arm})
	}
	ev := s.o.Log.Info().Str("request_id", id).Str("model", openai.Clip(model))
	if profile != "" {
		ev = ev.Str("profile", profile).Str("profile_rule", x.meta.profileRule)
	}
	if x != nil && x.meta.objective != "" {
		ev = ev.Str("objective", openai.Clip(x.meta.objective))
	}
	if x != nil && x.queued > 0 {
		ev = ev.Float64("queued_ms", ms(x.queued))
	}
	if x != nil && x.dropped != "" {
		ev = ev.Str("dropped_reason", x.dropped)
	}
	ev.Int("status", e.Status).Str("error", e.Message).Msg("request")
}

// decideRequest does what every front does between a request's bytes and its dispatch: it parses
// the body, reads the headers' metadata and has the request decided, among the endpoints only
// sc allows. It returns the exchange, dispatched to its first endpoint, or the error to refuse
// the request with; x is non-nil (without a trace when undecided) once the body parsed, so that
// the refusal can name the request.
func (s *Server) decideRequest(ctx context.Context, kind openai.Kind, h http.Header, body []byte, received time.Time, sc scope) (x *exchange, _ *openai.Error) {
	req, err := openai.Parse(kind, body)
	if err != nil {
		return nil, asOpenAIError(err)
	}
	m, oerr := s.meta(h, req.User)
	if oerr != nil {
		return nil, oerr
	}
	x = &exchange{client: ctx, req: req, meta: m, received: received}
	x.modelRule = s.rewriteModel(req, m)
	x.prompt = s.promptKeysOf(ctx, req) // after the rewrite: a remote tokenizer is asked for the served model
	if x.body, err = req.UpstreamBody(); err != nil {
		return x, &openai.Error{Status: http.StatusInternalServerError, Type: "server_error", Message: "encoding the upstream request: " + err.Error()}
	}
	if prof, ok := s.o.Pipeline.(Profiles); ok {
		if m.profile, m.profileRule, err = prof.Choose(h, m.objective, m.slo.Any()); err != nil {
			var pe *config.ProfileError
			if errors.As(err, &pe) {
				return x, openai.BadRequest(pe.Header, "%s", pe.Message)
			}
			return x, openai.BadRequest("", "choosing the scheduling profile: %v", err)
		}
		x.meta = m
	}
	p := &pending{ctx: ctx, req: req, prompt: x.prompt, meta: m, received: received, scope: sc}
	pd := s.pd.Load()
	s.disaggregate(p, pd)
	x.meta = p.meta
	decided := false
	if s.flow != nil {
		p.flow, p.bytes = s.flow.flowKey(h, req, m), int64(len(body))
		decided = s.flow.decide(p)
	} else {
		decided = s.decider.decide(p)
	}
	x.queued = p.waited
	if !decided && shuttingDown(ctx) { // the router's grace ended while it waited (shutdown.go)
		return x, ShutdownError()
	}
	if !decided { // counted and logged as a 499 like a client that leaves mid-answer; nobody reads the body
		return x, &openai.Error{Status: statusClientClosed, Type: "invalid_request_error", Message: "the client went away before a decision"}
	}
	x.cycle, x.trace, x.first = p.cycle, p.trace, p.first
	t := p.trace
	if p.shed != nil { // flow control answered it: refused at the queue, its TTL, no endpoint
		x.dropped = p.dropped
		if t != nil {
			s.decisions.add(t)
		}
		return x, p.shed
	}
	if t == nil {
		return x, s.noEndpoint(req.Model, p.states, p.full, sc.only != nil)
	}
	if t.Admitted && len(t.Order) > 0 && x.meta.pd.Hop == sdk.HopDecode && x.first != nil {
		s.decidePrefill(x, sc, pd) // before the trace is kept: it records the prefill decision
	}
	s.decisions.add(t)
	if s.o.Metrics != nil {
		s.o.Metrics.Decided(t.Profile, t.Outcome())
	}
	if !t.Admitted {
		return x, &openai.Error{Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Code: "shed",
			Message: "the router shed this request: " + t.Reason}
	}
	if len(t.Order) == 0 {
		return x, &openai.Error{Status: http.StatusServiceUnavailable, Type: "server_error",
			Message: "no endpoint can take this request: " + t.Reason}
	}
	return x, nil
}

// debugTrace is the decision trace as JSON when the request asked for it (x-foresight-debug: 1)
// and was decided; nil otherwise.
func (x *exchange) debugTrace() []byte {
	if !x.meta.debug || x.trace == nil {
		return nil
	}
	b, err := json.Marshal(x.trace)
	if err != nil {
		return nil
	}
	return b
}

// asOpenAIError returns err as an OpenAI error (a 400 unless it is an *openai.Error).
func asOpenAIError(err error) *openai.Error {
	var oe *openai.Error
	if errors.As(err, &oe) {
		return oe
	}
	return openai.BadRequest("", "%v", err)
}
