package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/foresight-router/foresight/internal/logbuf"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// builtinPipeline is a pipeline of in-process stages: round-robin over the candidates, so that
// successive requests start on different endpoints.
const builtinPipeline = `
plugins:
  - name: rr
    type: round-robin-picker
pipeline:
  picker: {pluginRef: rr}
`

// fixture is a router in front of emulated vLLM servers (and, optionally, dead addresses).
type fixture struct {
	log   *logbuf.Buffer // the access lines
	srv   *Server
	url   string
	admin string
	fleet *emulator.Fleet
	reg   *prometheus.Registry
}

func newFixture(t *testing.T, live int, dead ...string) *fixture {
	t.Helper()
	return newFixtureScraping(t, 10*time.Millisecond, live, dead...)
}

// newFixtureScraping scrapes every interval: a long one keeps a dead endpoint in the rotation
// (it leaves after 3 failed scrapes or connections).
func newFixtureScraping(t *testing.T, interval time.Duration, live int, dead ...string) *fixture {
	t.Helper()
	fleet, err := emulator.Start(live, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	var eps []endpoints.Endpoint
	for i, a := range dead {
		eps = append(eps, endpoints.Endpoint{ID: "dead-" + string(rune('a'+i)), Address: a})
	}
	for i, a := range fleet.Addrs() {
		eps = append(eps, endpoints.Endpoint{ID: "vllm-" + string(rune('0'+i)), Address: a})
	}
	f := newFixtureFor(t, interval, eps)
	f.fleet = fleet
	return f
}

// newFixtureFor is a router in front of eps; it waits for the first scrape of the endpoints whose
// ID starts with "vllm-".
func newFixtureFor(t *testing.T, interval time.Duration, eps []endpoints.Endpoint) *fixture {
	t.Helper()
	set := startSet(t, interval, eps)
	cfg, err := config.Parse("test.yaml", []byte(builtinPipeline))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Build(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	logs := &logbuf.Buffer{}
	reg := prometheus.NewRegistry()
	reqs, err := metrics.NewRequests(reg)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := metrics.NewStages(reg, p.Plugins)
	if err != nil {
		t.Fatal(err)
	}
	var srv *Server
	perEndpoint, err := metrics.NewEndpoints(reg, func() []metrics.EndpointGauges { return srv.EndpointGauges() })
	if err != nil {
		t.Fatal(err)
	}
	srv, err = New(Options{Pipeline: p, Endpoints: set, MaxBodyBytes: 4096, ConnectTimeout: time.Second, PrefixBlocks: 1 << 16,
		UpstreamTimeout: 30 * time.Second, Decisions: 8, Metrics: reqs, Stages: stages, EndpointMetrics: perEndpoint, Log: zerolog.New(logs),
		Priority: func(name string) (int32, bool) {
			if name == "batch" {
				return -1, true
			}
			return 0, false
		}, Objectives: []string{"batch"}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv)
	t.Cleanup(api.Close)
	adminSrv := httptest.NewServer(admin.Handler(admin.Options{Metrics: reg, Decisions: srv.Decisions}))
	t.Cleanup(adminSrv.Close)
	t.Cleanup(srv.Close)
	return &fixture{log: logs, srv: srv, url: api.URL, admin: adminSrv.URL, reg: reg}
}

// startSet runs an endpoint set over eps until the test ends, once the endpoints whose ID starts
// with "vllm-" have been scraped.
func startSet(t *testing.T, interval time.Duration, eps []endpoints.Endpoint) *endpoints.Set {
	t.Helper()
	return startSetWith(t, endpoints.Config{Interval: interval}, eps)
}

// startSetWith is startSet with the set's whole configuration.
func startSetWith(t *testing.T, cfg endpoints.Config, eps []endpoints.Endpoint) *endpoints.Set {
	t.Helper()
	set, err := endpoints.New(cfg, eps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { set.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the live endpoints' first scrape", func() bool {
		for _, st := range set.Snapshot() {
			if strings.HasPrefix(st.ID, "vllm-") && (st.ScrapedAt.IsZero() || st.Models == nil) {
				return false
			}
		}
		return true
	})
	return set
}

// wantMetrics fails the test for each line of want that /metrics on the admin listener lacks.
func (f *fixture) wantMetrics(t *testing.T, want ...string) {
	t.Helper()
	resp, err := http.Get(f.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range want {
		if !bytes.Contains(data, []byte(w)) {
			t.Errorf("/metrics lacks %q:\n%s", w, data)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually.Wait(t, 10*time.Second, what, cond)
}

// post sends body to path with headers and returns the status, headers and body.
func (f *fixture) post(t *testing.T, path, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(data)
}

func chatBody(stream bool, extra string) string {
	b := `{"model":"` + emulator.DefaultModel + `","messages":[{"role":"system","content":"You are terse."},` +
		`{"role":"user","content":"Name three rivers of Europe."}],"max_tokens":12`
	if stream {
		b += `,"stream":true`
	}
	return b + extra + "}"
}

func TestStreamingChatHidesTheUsageTheClientDidNotAskFor(t *testing.T) {
	f := newFixture(t, 2)
	code, h, body := f.post(t, "/v1/chat/completions", chatBody(true, ""), HeaderRequestID, "req-1")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if h.Get(HeaderRequestID) != "req-1" {
		t.Errorf("x-request-id %q, want the client's", h.Get(HeaderRequestID))
	}
	if !strings.Contains(body, "data: [DONE]") || strings.Contains(body, `"usage"`) {
		t.Errorf("stream without [DONE] or with a usage block the client did not ask for:\n%s", body)
	}
	if n := strings.Count(body, `"delta"`); n < 12 {
		t.Errorf("%d deltas, want at least max_tokens=12:\n%s", n, body)
	}
	traces := f.srv.Decisions()
	if len(traces) != 1 || traces[0].RequestID != "req-1" {
		t.Fatalf("decision traces: %d", len(traces))
	}
}

// TestStreamedRequestsTeachTTFTAtTheFirstToken: a streamed request gives the producer its TTFT
// sample at the first token and its TPOT sample when the stream ends, each measure once, with
// the endpoint and dispatch time it was routed with.
func TestStreamedRequestsTeachTTFTAtTheFirstToken(t *testing.T) {
	f := newFixture(t, 1)
	var mu sync.Mutex
	var got []sdk.Sample
	f.srv.o.Samples = feedback.New(func(_ context.Context, s []sdk.Sample) (sdk.ObserveResult, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s...)
		return sdk.ObserveResult{Accepted: len(s)}, nil
	}, 1, time.Hour)
	code, _, body := f.post(t, "/v1/chat/completions", chatBody(true, ""), HeaderRequestID, "req-s")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	waitFor(t, "two samples", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	first, last := got[0], got[1]
	for _, s := range got {
		if s.EndpointID != "vllm-0" || s.DispatchedAt.IsZero() || !s.Request.Streaming || s.Request.MaxOutputTokens != 12 {
			t.Errorf("sample without its request or dispatch: %+v", s)
		}
	}
	if !(first.ActualTTFTMs > 0) || first.ActualTPOTMs != 0 || first.OutputTokens != 0 {
		t.Errorf("first sample %+v, want the TTFT alone", first)
	}
	if last.ActualTTFTMs != 0 || !(last.ActualTPOTMs > 0) || last.OutputTokens != 12 {
		t.Errorf("last sample %+v, want the TPOT and 12 output tokens alone", last)
	}
}

func TestStreamingCompletionPassesUsageThrough(t *testing.T) {
	f := newFixture(t, 1)
	body := `{"model":"` + emulator.DefaultModel + `","prompt":"The capital of France is","max_tokens":5,` +
		`"stream":true,"stream_options":{"include_usage":true}}`
	code, _, out := f.post(t, "/v1/completions", body)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, out)
	}
	if !strings.Contains(out, `"completion_tokens":5`) || !strings.Contains(out, `"cached_tokens"`) {
		t.Errorf("the usage chunk the client asked for is missing:\n%s", out)
	}
}

func TestNonStreamingAnswersWhole(t *testing.T) {
	f := newFixture(t, 1)
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", chatBody(false, "")},
		{"/v1/completions", `{"model":"` + emulator.DefaultModel + `","prompt":"Once upon a time","max_tokens":4}`},
	} {
		code, h, out := f.post(t, tc.path, tc.body)
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Fatalf("%s: status %d, %s: %s", tc.path, code, h.Get("Content-Type"), out)
		}
		var resp struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.Usage.CompletionTokens == 0 {
			t.Errorf("%s: %v, body %s", tc.path, err, out)
		}
	}
}

// deadAddress returns a 127.0.0.1 address nothing listens on.
func deadAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestFailsOverToTheNextPickedEndpoint(t *testing.T) {
	// Scrapes every minute: the dead endpoint stays in the rotation after its first failed scrape.
	f := newFixtureScraping(t, time.Minute, 1, deadAddress(t))
	// Round-robin starts successive requests on each endpoint in turn, so one of two starts on
	// the dead one and must fail over.
	for i := range 2 {
		code, _, out := f.post(t, "/v1/chat/completions", chatBody(true, ""))
		if code != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i, code, out)
		}
	}
	if logs := f.log.String(); !strings.Contains(logs, `"attempts":2`) || !strings.Contains(logs, `"endpoint":"vllm-0"`) {
		t.Errorf("no request failed over to vllm-0:\n%s", logs)
	}
	// Three dispatches: the dead endpoint once, vllm-0 twice (once first, once as the failover).
	// The dead one is still in the rotation (healthy 1) and neither has a request in flight.
	f.wantMetrics(t, `foresight_endpoint_requests_total{endpoint="dead-a"} 1`, `foresight_endpoint_requests_total{endpoint="vllm-0"} 2`,
		`foresight_endpoint_healthy{endpoint="dead-a"} 1`, `foresight_endpoint_inflight_requests{endpoint="vllm-0"} 0`)
}

func TestNoReachableEndpointIs502(t *testing.T) {
	f := newFixture(t, 0+1, deadAddress(t))
	f.fleet.Close() // the live one dies too, after its first scrape
	code, _, out := f.post(t, "/v1/chat/completions", chatBody(false, ""))
	if code != http.StatusBadGateway && code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 502 (or 503 once the scrapes noticed): %s", code, out)
	}
	if !strings.Contains(out, `"error"`) {
		t.Errorf("not an OpenAI error: %s", out)
	}
}

func TestBadInputIsA4xxNamingTheProblem(t *testing.T) {
	f := newFixture(t, 1)
	big := chatBody(false, `,"user":"`+strings.Repeat("x", 5000)+`"`)
	tests := []struct {
		name    string
		body    string
		headers []string
		code    int
		says    string
	}{
		{"malformed JSON", `{"model":`, nil, 400, ""},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "model"},
		{"oversized body", big, nil, 413, "maxBodyBytes"},
		{"TTFT SLO not a number", chatBody(false, ""), []string{HeaderSLOTTFT, "soon"}, 400, HeaderSLOTTFT},
		{"negative TPOT SLO alias", chatBody(false, ""), []string{HeaderSLOTPOTAlias, "-5"}, 400, HeaderSLOTPOTAlias},
		{"bad debug flag", chatBody(false, ""), []string{HeaderDebug, "yes"}, 400, HeaderDebug},
		{"unknown model", strings.Replace(chatBody(false, ""), emulator.DefaultModel, "gpt-9", 1), nil, 404, "gpt-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, out := f.post(t, "/v1/chat/completions", tt.body, tt.headers...)
			if code != tt.code || !strings.Contains(out, `"error"`) || !strings.Contains(out, tt.says) {
				t.Errorf("status %d, body %s; want %d naming %q", code, out, tt.code, tt.says)
			}
		})
	}
}

func TestDebugHeaderReturnsTheDecision(t *testing.T) {
	f := newFixture(t, 2)
	code, h, out := f.post(t, "/v1/chat/completions", chatBody(false, ""), HeaderDebug, "1",
		HeaderSLOTTFT, "500", HeaderObjective, "batch")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, out)
	}
	var trace struct {
		RequestID string   `json:"request_id"`
		Order     []string `json:"order"`
	}
	if err := json.Unmarshal([]byte(h.Get(HeaderDecision)), &trace); err != nil || len(trace.Order) != 2 {
		t.Fatalf("decision header %q: %v", h.Get(HeaderDecision), err)
	}
	if trace.RequestID == "" || trace.RequestID != h.Get(HeaderRequestID) {
		t.Errorf("the trace is of request %q, the response of %q", trace.RequestID, h.Get(HeaderRequestID))
	}
	code, h, _ = f.post(t, "/v1/chat/completions", chatBody(false, ""))
	if code != http.StatusOK || h.Get(HeaderDecision) != "" {
		t.Errorf("status %d; a decision header without asking: %q", code, h.Get(HeaderDecision))
	}
}

func TestModelsAndMetrics(t *testing.T) {
	f := newFixture(t, 2)
	resp, err := http.Get(f.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(data, []byte(`"id":"`+emulator.DefaultModel+`"`)) || bytes.Count(data, []byte(`"id"`)) != 1 {
		t.Errorf("/v1/models: %s", data)
	}
	f.post(t, "/v1/chat/completions", chatBody(true, ""))
	f.wantMetrics(t, `foresight_requests_total{code="200"} 1`, "llm_d_epp_request_ttft_seconds_count 1", "foresight_decision_wait_seconds_count 1",
		"llm_d_epp_request_streaming_tpot_seconds_count 1", `foresight_stage_duration_seconds_count{plugin="rr",profile="default",stage="picker"} 1`,
		`foresight_plugin_up{plugin="rr"} 1`, `foresight_plugin_restarts_total{plugin="rr"} 0`,
		// Round-robin's first pick is the first endpoint; the other has had none (no series yet).
		`foresight_endpoint_requests_total{endpoint="vllm-0"} 1`, `foresight_endpoint_healthy{endpoint="vllm-1"} 1`,
		`foresight_endpoint_waiting_requests{endpoint="vllm-1"} 0`, `foresight_endpoint_inflight_requests{endpoint="vllm-0"} 0`,
		`foresight_endpoint_prefix_index_blocks{endpoint="vllm-1"} 0`)
	if n := f.srv.prefix.Len("vllm-0"); n == 0 {
		t.Errorf("the prefix index holds no block for vllm-0 after its answer")
	} else {
		f.wantMetrics(t, fmt.Sprintf(`foresight_endpoint_prefix_index_blocks{endpoint="vllm-0"} %d`, n))
	}
	resp, err = http.Get(f.admin + "/debug/decisions")
	if err != nil {
		t.Fatal(err)
	}
	var traces []json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&traces)
	resp.Body.Close()
	if err != nil || len(traces) != 1 {
		t.Errorf("/debug/decisions: %d traces, %v", len(traces), err)
	}
}

// TestClientGoingAwayCancelsUpstream: a streaming client that disconnects mid-answer cancels the
// request on the engine (vLLM aborts a request whose connection closes).
func TestClientGoingAwayCancelsUpstream(t *testing.T) {
	canceled := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			io.WriteString(w, "vllm:num_requests_waiting 0\nvllm:num_requests_running 0\nvllm:kv_cache_usage_perc 0\n")
		case "/v1/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"once"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
			select { // an endless answer, until the router hangs up
			case <-r.Context().Done():
				close(canceled)
			case <-time.After(30 * time.Second):
			}
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(upstream.Close)
	f := newFixtureFor(t, 10*time.Millisecond, []endpoints.Endpoint{{ID: "vllm-0", Address: upstream.URL}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"go on"}],"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "once") {
		t.Fatalf("first event %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the engine's request was not canceled 10 s after the client left")
	}
	waitFor(t, "the access line of the abandoned request", func() bool { return strings.Contains(f.log.String(), `"status":499`) })
}

// TestUnroutedRequestsGetOpenAIErrors: a wrong method or an unknown path is answered in OpenAI's
// error shape (405 with Allow, 404), never ServeMux's plain text.
func TestUnroutedRequestsGetOpenAIErrors(t *testing.T) {
	f := newFixture(t, 1)
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/v1/completions", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPut, "/v1/chat/completions", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/v1/models", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/v1/embeddings", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/v1/audio/transcriptions", http.StatusNotFound, ""},
	} {
		req, _ := http.NewRequest(tc.method, f.url+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Message, Type string }
		}
		if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow || json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
			t.Errorf("%s %s: status %d, Allow %q, body %q; want %d, Allow %q, an OpenAI error", tc.method, tc.path,
				resp.StatusCode, resp.Header.Get("Allow"), body, tc.status, tc.allow)
		}
	}
}

// TestCycleCarriesTheEndpointsOutOfTheRotation: an unhealthy and an ejected endpoint are no
// candidates but travel in the cycle's Excluded with their labels and reason, whatever subset a
// gateway offered.
func TestCycleCarriesTheEndpointsOutOfTheRotation(t *testing.T) {
	zone := func(z string) map[string]string { return map[string]string{"topology.kubernetes.io/zone": z} }
	set, err := endpoints.New(endpoints.Config{Outlier: endpoints.Outlier{ConsecutiveFailures: 1, MaxEjectionPercent: 50}}, []endpoints.Endpoint{
		{ID: "a", Address: "127.0.0.1:9001", Labels: zone("z1")},
		{ID: "b", Address: "127.0.0.1:9002", Labels: zone("z1")},
		{ID: "c", Address: "127.0.0.1:9003", Labels: zone("z2")},
		{ID: "d", Address: "127.0.0.1:9004"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range endpoints.DefaultFailAfter { // the set is not run: only reports change it
		set.ReportFailure("b", fmt.Errorf("connection refused"))
	}
	set.ReportRequest("c", fmt.Errorf("answered 500 Internal Server Error"))
	srv, err := New(Options{Pipeline: newPicker(0), Endpoints: set, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	want := []sdk.ExcludedEndpoint{
		{ID: "b", Labels: zone("z1"), Reason: sdk.ExcludedUnhealthy},
		{ID: "c", Labels: zone("z2"), Reason: sdk.ExcludedEjected},
	}
	for _, tt := range []struct {
		name       string
		only       func(endpoints.Endpoint) bool
		candidates []string
	}{
		{"the whole fleet", nil, []string{"a", "d"}},
		{"a gateway's subset", func(e endpoints.Endpoint) bool { return e.ID == "a" }, []string{"a"}},
	} {
		c, _, _, _ := srv.cycle(&openai.Request{Model: "m"}, nil, meta{id: "r"}, time.Now(), scope{only: tt.only})
		var got []string
		for _, e := range c.Endpoints {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, tt.candidates) {
			t.Errorf("%s: candidates %v, want %v", tt.name, got, tt.candidates)
		}
		if !reflect.DeepEqual(c.Excluded, want) {
			t.Errorf("%s: excluded %+v, want %+v", tt.name, c.Excluded, want)
		}
	}
}

// On a healthy fleet, the usual case, listing the endpoints out of the rotation costs a cycle no
// allocation.
func TestExcludedAllocatesNothingOnAHealthyFleet(t *testing.T) {
	states := make([]endpoints.State, 64)
	for i := range states {
		states[i] = endpoints.State{Endpoint: endpoints.Endpoint{ID: fmt.Sprint("e", i)}, Healthy: true}
	}
	if n := testing.AllocsPerRun(100, func() {
		if excluded(states) != nil {
			t.Fatal("a healthy fleet has endpoints out of the rotation")
		}
	}); n != 0 {
		t.Errorf("%v allocations per cycle, want 0", n)
	}
}
