package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/internal/logbuf"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// flowRouter is a router with flow control over one endpoint that holds every request until the
// test releases them, and records the order in which they reached it. Its detector allows one
// request in flight per endpoint (maxInflight: 1), so a second request finds the pool saturated.
type flowRouter struct {
	*faultRouter
	srv     *Server
	backend *recorder
}

// recorder is a holder that notes each request's x-request-id as it arrives.
type recorder struct {
	*holder
	mu    sync.Mutex
	order []string
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.order = append(r.order, req.Header.Get(HeaderRequestID))
	r.mu.Unlock()
	r.holder.serve(w, req)
}

func (r *recorder) arrived() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order...)
}

// flowSection parses a flowControl section (defaults applied, validated as the config file's).
func flowSection(t *testing.T, yaml string) *config.FlowControl {
	t.Helper()
	cfg, err := config.Parse("flow.yaml", []byte(builtinPipeline+"flowControl:\n"+yaml))
	if err != nil {
		t.Fatal(err)
	}
	return &cfg.FlowControl
}

// newFlowRouter starts a router with the flowControl section fc over eps (none: a recording
// holder, vllm-a); detector.maxInflight 1 is added to fc.
func newFlowRouter(t *testing.T, fc string, eps ...endpoints.Endpoint) *flowRouter {
	t.Helper()
	rec := &recorder{holder: newHolder()}
	rec.started = make(chan struct{}, 64)
	if len(eps) == 0 {
		eps = []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, rec.serve)}}
	}
	set := startSetWith(t, endpoints.Config{Interval: 20 * time.Millisecond}, eps)
	reg := prometheus.NewRegistry()
	reqs, err := metrics.NewRequests(reg)
	if err != nil {
		t.Fatal(err)
	}
	flows, err := metrics.NewFlowControl(reg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	srv, err := New(Options{Pipeline: byID{}, Endpoints: set, MaxBodyBytes: 1 << 16, ConnectTimeout: time.Second,
		UpstreamTimeout: 30 * time.Second, MaxAttempts: 1, Decisions: 64, PrefixBlocks: 1 << 10, Metrics: reqs,
		FlowControl: flowSection(t, "  enabled: true\n  detector: {maxInflight: 1}\n"+fc), FlowMetrics: flows, Log: zerolog.New(logs),
		Priority: func(name string) (int32, bool) { return -1, name == "batch" }, Objectives: []string{"batch"}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv)
	t.Cleanup(api.Close)
	t.Cleanup(srv.Close)
	return &flowRouter{faultRouter: &faultRouter{url: api.URL, log: logs, reg: reg, set: set}, srv: srv, backend: rec}
}

// answer is a client's view of one request.
type answer struct {
	id     string
	status int
	header http.Header
	body   string
}

// send posts a streamed chat request named id with headers kv and returns its answer; it is
// made for goroutines (errors go to the answer's body).
func (f *flowRouter) send(ctx context.Context, id, body string, kv ...string) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return answer{id: id, body: err.Error()}
	}
	req.Header.Set(HeaderRequestID, id)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{id: id, body: err.Error()}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{id: id, status: resp.StatusCode, header: resp.Header, body: string(data)}
}

// queued is how many requests wait in the queue.
func (f *flowRouter) queued() int {
	f.srv.flow.mu.Lock()
	defer f.srv.flow.mu.Unlock()
	return f.srv.flow.q.Total()
}

// hold sends a request that the backend holds, and returns once it reached the backend, with a
// channel that gives its answer.
func (f *flowRouter) hold(t *testing.T, id string) <-chan answer {
	t.Helper()
	out := make(chan answer, 1)
	go func() { out <- f.send(context.Background(), id, chatBody(true, "")) }()
	<-f.backend.started
	return out
}

// wantDropped checks a request flow control answered itself: status, OpenAI type and code,
// and the reason in both headers.
func wantDropped(t *testing.T, a answer, status int, typ, reason string) {
	t.Helper()
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	code := strings.ReplaceAll(reason, "-", "_")
	if a.status != status || json.Unmarshal([]byte(a.body), &e) != nil || e.Error.Type != typ || e.Error.Code != code || e.Error.Message == "" {
		t.Errorf("%s: %d %s; want %d with type %q and code %q", a.id, a.status, a.body, status, typ, code)
	}
	if a.header.Get(HeaderDroppedReason) != reason || a.header.Get(HeaderDroppedReasonAlias) != reason {
		t.Errorf("%s: reason headers %q and %q, want %q in both", a.id, a.header.Get(HeaderDroppedReason), a.header.Get(HeaderDroppedReasonAlias), reason)
	}
}

// A burst over capacity waits in the router and drains in deadline order (edf, one flow): the
// held request fills the endpoint, five requests with TTFT objectives 5, 1, 3, 2 and 4 s queue
// in that order, and once the endpoint frees they reach it as 1, 2, 3, 4, 5 s — each only when
// the one before finished, so every one is dispatched on fresh state. None is lost.
func TestFlowControlDrainsABurstInDeadlineOrder(t *testing.T) {
	f := newFlowRouter(t, "  policy: edf\n")
	held := f.hold(t, "held")
	answers := make(chan answer, 5)
	for i, slo := range []string{"5000", "1000", "3000", "2000", "4000"} {
		go func() { answers <- f.send(context.Background(), "slo-"+slo, chatBody(true, ""), HeaderSLOTTFT, slo) }()
		waitFor(t, fmt.Sprintf("%d requests queued", i+1), func() bool { return f.queued() == i+1 })
	}
	close(f.backend.release)
	if a := <-held; a.status != http.StatusOK || !strings.Contains(a.body, "[DONE]") {
		t.Fatalf("the held request: %d %s", a.status, a.body)
	}
	for range 5 {
		if a := <-answers; a.status != http.StatusOK || !strings.Contains(a.body, "[DONE]") {
			t.Errorf("%s: %d %s", a.id, a.status, a.body)
		}
	}
	want := []string{"held", "slo-1000", "slo-2000", "slo-3000", "slo-4000", "slo-5000"}
	if got := f.backend.arrived(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order at the endpoint %v, want %v", got, want)
	}
	if got := f.metric(t, "foresight_flow_dispatched_total"); got["0"] != 5 {
		t.Errorf("foresight_flow_dispatched_total %v, want 5 in band 0", got)
	}
	if got := f.metric(t, "foresight_flow_queue_requests"); got["0"] != 0 {
		t.Errorf("foresight_flow_queue_requests %v, want band 0 empty", got)
	}
	queuedLines, traced := 0, 0
	for _, l := range f.access(t) {
		if _, ok := l["queued_ms"]; ok && l["status"] == 200.0 {
			queuedLines++
		}
	}
	for _, tr := range f.srv.Decisions() {
		if tr.FlowVerdict != "" && tr.FlowWait > 0 {
			traced++
		}
	}
	if queuedLines != 5 || traced != 5 {
		t.Errorf("%d access lines with queued_ms and %d traces with the wait and verdict, want 5 of each", queuedLines, traced)
	}
}

// A request that waits its band's TTL is answered 429 ttl-expired, with both reason headers
// and an OpenAI-shaped body, and counted.
func TestFlowControlShedsAtTheTTL(t *testing.T) {
	f := newFlowRouter(t, "  default: {ttl: 100ms}\n")
	held := f.hold(t, "held")
	a := f.send(context.Background(), "late", chatBody(true, ""))
	wantDropped(t, a, http.StatusTooManyRequests, "rate_limit_exceeded", "ttl-expired")
	close(f.backend.release)
	<-held
	if got := f.metric(t, "foresight_flow_shed_total"); got["0"] != 1 {
		t.Errorf("foresight_flow_shed_total %v, want 1 in band 0", got)
	}
	if got := f.metric(t, "foresight_requests_total"); got["429"] != 1 || got["200"] != 1 {
		t.Errorf("foresight_requests_total %v, want one 200 and one 429", got)
	}
}

// A band at its capacity refuses at once (band-full), a request larger than its band's bytes is
// too-large, and neither disturbs the request already queued, which is then served. A request
// of a lower band queues in its own band, behind nothing of band 0.
func TestFlowControlRefusesAtCapacity(t *testing.T) {
	f := newFlowRouter(t, "  default: {maxRequests: 1, maxBytes: 1000}\n")
	held := f.hold(t, "held")
	first := make(chan answer, 1)
	go func() { first <- f.send(context.Background(), "first", chatBody(true, "")) }()
	waitFor(t, "the first request queued", func() bool { return f.queued() == 1 })
	wantDropped(t, f.send(context.Background(), "full", chatBody(true, "")), http.StatusTooManyRequests, "rate_limit_exceeded", "band-full")
	big := chatBody(true, `,"user":"`+strings.Repeat("x", 1000)+`"`)
	wantDropped(t, f.send(context.Background(), "big", big, HeaderObjective, "batch"), http.StatusTooManyRequests, "rate_limit_exceeded", "too-large")
	close(f.backend.release)
	<-held
	if a := <-first; a.status != http.StatusOK {
		t.Errorf("the queued request: %d %s", a.status, a.body)
	}
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	shed := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "foresight_flow_shed_total" {
			for _, m := range mf.GetMetric() {
				shed[m.GetLabel()[0].GetValue()+"/"+m.GetLabel()[1].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if shed["0/band-full"] != 1 || shed["-1/too-large"] != 1 || len(shed) != 2 {
		t.Errorf("foresight_flow_shed_total by band/reason %v, want 0/band-full and -1/too-large once each", shed)
	}
}

// A client that goes away while its request waits takes it out of the queue at once: the queue
// is empty before anything freed the endpoint, the request is counted client-gone and logged 499.
func TestFlowControlClientGoneLeavesTheQueue(t *testing.T) {
	f := newFlowRouter(t, "")
	held := f.hold(t, "held")
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan answer, 1)
	go func() { gone <- f.send(ctx, "gone", chatBody(true, "")) }()
	waitFor(t, "the request queued", func() bool { return f.queued() == 1 })
	cancel()
	<-gone
	waitFor(t, "the queue emptied", func() bool { return f.queued() == 0 })
	waitFor(t, "the client-gone count", func() bool { return f.metric(t, "foresight_flow_shed_total")["0"] == 1 })
	close(f.backend.release)
	<-held
	waitFor(t, "the 499 access line", func() bool {
		for _, l := range f.access(t) {
			if l["request_id"] == "gone" && l["status"] == 499.0 {
				return true
			}
		}
		return false
	})
	if got := f.backend.arrived(); len(got) != 1 {
		t.Errorf("the endpoint got %v, want only the held request", got)
	}
}

// With no endpoint at all (scaled to zero), a request waits flowControl.noEndpointsTTL and is
// answered 503 no-endpoints; one that waits while an endpoint appears is served.
func TestFlowControlWaitsForEndpoints(t *testing.T) {
	f := newFlowRouter(t, "  noEndpointsTTL: 100ms\n")
	if err := f.set.Update(nil); err != nil { // scaled to zero
		t.Fatal(err)
	}
	wantDropped(t, f.send(context.Background(), "none", chatBody(true, "")), http.StatusServiceUnavailable, "server_error", "no-endpoints")
	if got := f.metric(t, "foresight_flow_shed_total"); got["0"] != 1 {
		t.Errorf("foresight_flow_shed_total %v, want 1 in band 0", got)
	}

	f = newFlowRouter(t, "  noEndpointsTTL: 1m\n")
	if err := f.set.Update(nil); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan answer, 1)
	go func() { waiting <- f.send(context.Background(), "waits", chatBody(false, "")) }()
	waitFor(t, "the request in the waiting room", func() bool {
		f.srv.flow.mu.Lock()
		defer f.srv.flow.mu.Unlock()
		return f.srv.flow.room == 1
	})
	fleet, err := emulator.Start(1, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	if err := f.set.Update([]endpoints.Endpoint{{ID: "vllm-b", Address: fleet.Addrs()[0]}}); err != nil {
		t.Fatal(err)
	}
	if a := <-waiting; a.status != http.StatusOK {
		t.Errorf("after an endpoint appeared: %d %s, want 200", a.status, a.body)
	}
}

// flowControl.enabled false builds no gate: the request path is today's (a full pool is
// answered at once, nothing is queued) and no access line has queued_ms.
func TestFlowControlOffChangesNothing(t *testing.T) {
	h := newHolder()
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, h.serve)}}
	off := flowSection(t, "  enabled: false\n")
	srv, err := New(Options{Pipeline: byID{}, Endpoints: startSet(t, time.Hour, eps), FlowControl: off, Log: zerolog.Nop()})
	if err != nil || srv.flow != nil {
		t.Fatalf("flow control off: gate %v, error %v; want none", srv.flow, err)
	}
	f := newRouterOver(t, endpoints.Config{Interval: 20 * time.Millisecond}, eps, func(o *Options) {
		o.MaxInflightPerEndpoint = 1
		o.FlowControl = off
	})
	rest := hold(t, f.url, h)
	code, out := postTo(t, f.url, chatBody(true, ""))
	wantError(t, code, out, http.StatusTooManyRequests, "endpoints_full", "server.maxInflightPerEndpoint")
	close(h.release)
	rest()
	for _, l := range f.access(t) {
		if _, ok := l["queued_ms"]; ok {
			t.Errorf("access line with queued_ms without flow control: %v", l)
		}
	}
}

// The waiting room holds at most default.maxRequests requests: one more is answered 503
// no-endpoints at once, and one whose client leaves is counted client-gone.
func TestFlowControlWaitingRoomIsBounded(t *testing.T) {
	f := newFlowRouter(t, "  noEndpointsTTL: 1m\n  default: {maxRequests: 1}\n")
	if err := f.set.Update(nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan answer, 1)
	go func() { waiting <- f.send(ctx, "waits", chatBody(true, "")) }()
	waitFor(t, "the request in the waiting room", func() bool {
		f.srv.flow.mu.Lock()
		defer f.srv.flow.mu.Unlock()
		return f.srv.flow.room == 1
	})
	wantDropped(t, f.send(context.Background(), "more", chatBody(true, "")), http.StatusServiceUnavailable, "server_error", "no-endpoints")
	cancel()
	<-waiting
	waitFor(t, "the client-gone count", func() bool {
		mfs, err := f.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if mf.GetName() == "foresight_flow_shed_total" && m.GetLabel()[1].GetValue() == "client-gone" {
					return m.GetCounter().GetValue() == 1
				}
			}
		}
		return false
	})
}

// Closing the server answers the requests still waiting 503 shutting-down rather than leaving
// their clients hanging.
func TestFlowControlCloseAnswersTheQueue(t *testing.T) {
	f := newFlowRouter(t, "")
	held := f.hold(t, "held")
	queued := make(chan answer, 1)
	go func() { queued <- f.send(context.Background(), "queued", chatBody(true, "")) }()
	waitFor(t, "the request queued", func() bool { return f.queued() == 1 })
	f.srv.Close()
	wantDropped(t, <-queued, http.StatusServiceUnavailable, "server_error", "shutting-down")
	close(f.backend.release)
	if a := <-held; a.status != http.StatusOK {
		t.Errorf("the request in flight: %d %s", a.status, a.body)
	}
}

// By default the detector judges endpoints by their state before the pipeline runs, and the
// pipeline picks among those with room: byID prefers vllm-a, but with vllm-a full (its one
// request held, maxInflight 1) the next request goes to vllm-b rather than queue, and the one
// after, with both full, queues.
func TestFlowControlPicksAmongEndpointsWithRoom(t *testing.T) {
	a, b := &recorder{holder: newHolder()}, &recorder{holder: newHolder()}
	a.started, b.started = make(chan struct{}, 8), make(chan struct{}, 8)
	f := newFlowRouter(t, "", endpoints.Endpoint{ID: "vllm-a", Address: startFaulty(t, a.serve)},
		endpoints.Endpoint{ID: "vllm-b", Address: startFaulty(t, b.serve)})
	answers := make(chan answer, 3)
	go func() { answers <- f.send(context.Background(), "first", chatBody(true, "")) }()
	<-a.started
	go func() { answers <- f.send(context.Background(), "second", chatBody(true, "")) }()
	<-b.started
	if f.queued() != 0 {
		t.Fatalf("%d requests queued while vllm-b had room", f.queued())
	}
	go func() { answers <- f.send(context.Background(), "third", chatBody(true, "")) }()
	waitFor(t, "the third request queued", func() bool { return f.queued() == 1 })
	close(a.release)
	close(b.release)
	for range 3 {
		if got := <-answers; got.status != http.StatusOK {
			t.Errorf("%s: %d %s", got.id, got.status, got.body)
		}
	}
	if got := append(a.arrived(), b.arrived()...); len(got) != 3 || got[0] != "first" || b.arrived()[0] != "second" {
		t.Errorf("vllm-a got %v, vllm-b %v; want first on vllm-a, second on vllm-b, third on either", a.arrived(), b.arrived())
	}
}

// With flowControl.candidates all, the detector only says whether the request waits: while some
// endpoint has room the pipeline chooses among every endpoint, so byID sends every request to
// vllm-a, full or not, as long as vllm-b has room; none queues.
func TestFlowControlAllCandidates(t *testing.T) {
	a, b := &recorder{holder: newHolder()}, &recorder{holder: newHolder()}
	a.started, b.started = make(chan struct{}, 8), make(chan struct{}, 8)
	f := newFlowRouter(t, "  candidates: all\n", endpoints.Endpoint{ID: "vllm-a", Address: startFaulty(t, a.serve)},
		endpoints.Endpoint{ID: "vllm-b", Address: startFaulty(t, b.serve)})
	answers := make(chan answer, 3)
	for _, id := range []string{"first", "second", "third"} {
		go func() { answers <- f.send(context.Background(), id, chatBody(true, "")) }()
		<-a.started
	}
	if f.queued() != 0 || len(b.arrived()) != 0 {
		t.Errorf("%d queued, vllm-b got %v; want none queued, all three on vllm-a", f.queued(), b.arrived())
	}
	close(a.release)
	close(b.release)
	for range 3 {
		if got := <-answers; got.status != http.StatusOK {
			t.Errorf("%s: %d %s", got.id, got.status, got.body)
		}
	}
}

// The gate keeps the slots each verdict reports per endpoint, for foresight_endpoint_slots: a
// verdict without them, or with 0 for an endpoint, makes its slots unknown again.
func TestEndpointSlotsFollowTheVerdicts(t *testing.T) {
	var s endpointSlots
	c := &sdk.Cycle{Endpoints: []sdk.Endpoint{{ID: "a"}, {ID: "b"}}}
	s.note(c, nil)
	if s.byID != nil {
		t.Fatal("a detector that never reports slots allocated the map")
	}
	s.note(c, []int{32, 0})
	if s.of("a") != 32 || s.of("b") != 0 {
		t.Errorf("after [32 0]: a %d, b %d", s.of("a"), s.of("b"))
	}
	s.note(&sdk.Cycle{Endpoints: []sdk.Endpoint{{ID: "b"}}}, []int{8}) // a cycle on b alone leaves a's
	if s.of("a") != 32 || s.of("b") != 8 {
		t.Errorf("after b's [8]: a %d, b %d", s.of("a"), s.of("b"))
	}
	s.retain([]string{"b"}) // a left the fleet
	if s.of("a") != 0 || s.of("b") != 8 {
		t.Errorf("after a left: a %d, b %d", s.of("a"), s.of("b"))
	}
	s.note(c, nil)
	if s.of("a") != 0 || s.of("b") != 0 || len(s.byID) != 0 {
		t.Errorf("after a verdict without slots: a %d, b %d (%d kept), want unknown", s.of("a"), s.of("b"), len(s.byID))
	}
}
