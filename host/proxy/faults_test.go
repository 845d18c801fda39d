package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/foresight-router/foresight/internal/logbuf"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// byID is a scheduler that tries the endpoints in the order of their IDs.
type byID struct{}

func (byID) Run(_ context.Context, c *sdk.Cycle) *pipeline.Trace {
	order := make([]int, len(c.Endpoints))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(c.Endpoints[a].ID, c.Endpoints[b].ID) })
	return &pipeline.Trace{RequestID: c.Request.ID, Candidates: c.Endpoints, Admitted: true, Order: order}
}

// A fault is what a broken engine does to a completion request; every other route (/metrics,
// /v1/models) is an emulated vLLM server's, so the router sees a healthy endpoint.
type fault func(w http.ResponseWriter, r *http.Request)

// chunk is one streamed chat chunk carrying text.
func chunk(text string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + text + `"}}]}` + "\n\n"
}

var faults = map[string]fault{
	"reset before headers": func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // close with RST
		conn.Close()
	},
	"5xx": func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"CUDA error: an illegal memory access","type":"InternalServerError"}}`, http.StatusInternalServerError)
	},
	"accept and never answer": func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server sees the router hang up
		<-r.Context().Done()
	},
	"slow first byte": func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	},
	"garbage before the first event": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "<html><body>upstream proxy error</body></html>\n\n")
	},
	"empty stream": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	},
	"cut mid-answer": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk("Hello")+chunk(" world"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection closes without the stream's end: as a killed engine's
	},
	"end without [DONE]": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk("Hello")+chunk(" world")) // and the response ends cleanly (EOF)
	},
	"garbage mid-answer": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk("Hello")+chunk(" world")+"data: \x00\x01garbage\n\n"+chunk("!")+"data: [DONE]\n\n")
	},
}

// startFaulty starts an emulated vLLM server whose completion routes do f.
func startFaulty(t *testing.T, f fault) string {
	t.Helper()
	cfgs, err := engine.Fleet("llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emulator.NewServer(cfgs[0], emulator.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	inner := emu.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "completions") {
			f(w, r)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// faultRouter is a router over the faulty servers (vllm-a, vllm-b, …, tried in that order) and then
// a working one, with a first-byte timeout of 300 ms.
type faultRouter struct {
	url  string
	log  *logbuf.Buffer
	reg  *prometheus.Registry
	good string // the working endpoint's ID
	set  *endpoints.Set
	srv  *Server
}

func newFaultRouter(t *testing.T, maxAttempts int, fs ...fault) *faultRouter {
	t.Helper()
	return newFaultRouterWith(t, endpoints.Outlier{}, maxAttempts, fs...)
}

// newFaultRouterWith is newFaultRouter with outlier detection configured by o; its endpoints are
// scraped every 20 ms.
func newFaultRouterWith(t *testing.T, o endpoints.Outlier, maxAttempts int, fs ...fault) *faultRouter {
	t.Helper()
	var eps []endpoints.Endpoint
	for i, f := range fs {
		eps = append(eps, endpoints.Endpoint{ID: "vllm-" + string(rune('a'+i)), Address: startFaulty(t, f)})
	}
	fleet, err := emulator.Start(1, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	good := "vllm-z"
	eps = append(eps, endpoints.Endpoint{ID: good, Address: fleet.Addrs()[0]})
	f := newRouterOver(t, endpoints.Config{Interval: 20 * time.Millisecond, Outlier: o}, eps, func(opts *Options) { opts.MaxAttempts = maxAttempts })
	f.good = good
	return f
}

// newRouterOver is a router over eps, tried in the order of their IDs, with a first-byte timeout of
// 300 ms and the options tune sets.
func newRouterOver(t *testing.T, cfg endpoints.Config, eps []endpoints.Endpoint, tune func(*Options)) *faultRouter {
	t.Helper()
	set := startSetWith(t, cfg, eps)
	reg := prometheus.NewRegistry()
	reqs, err := metrics.NewRequests(reg)
	if err != nil {
		t.Fatal(err)
	}
	var srv *Server
	if _, err := metrics.NewEndpoints(reg, func() []metrics.EndpointGauges { return srv.EndpointGauges() }); err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	o := Options{Pipeline: byID{}, Endpoints: set, MaxBodyBytes: 1 << 16, ConnectTimeout: time.Second,
		UpstreamTimeout: 30 * time.Second, FirstByteTimeout: 300 * time.Millisecond, MaxAttempts: 1,
		Decisions: 8, PrefixBlocks: 1 << 10, Metrics: reqs, Log: zerolog.New(logs)}
	tune(&o)
	srv, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv)
	t.Cleanup(api.Close)
	t.Cleanup(srv.Close)
	return &faultRouter{url: api.URL, log: logs, reg: reg, set: set, srv: srv}
}

// access returns the router's access lines.
func (f *faultRouter) access(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(f.log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("access line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// metric returns the values of a metric with one label, by that label's value.
func (f *faultRouter) metric(t *testing.T, name string) map[string]float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

func postTo(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

// Every fault before the client got a byte fails over to the next endpoint, streamed or not, and
// the client gets the working endpoint's whole answer.
func TestFaultsBeforeTheFirstByteFailOver(t *testing.T) {
	for _, name := range []string{"reset before headers", "5xx", "accept and never answer", "slow first byte", "garbage before the first event", "empty stream"} {
		for _, stream := range []bool{true, false} {
			if !stream && (name == "accept and never answer" || name == "slow first byte" || name == "empty stream") {
				continue // a whole answer has no first byte before it is complete
			}
			t.Run(name+map[bool]string{true: ", streamed", false: ", whole"}[stream], func(t *testing.T) {
				f := newFaultRouter(t, 3, faults[name])
				code, out := postTo(t, f.url, chatBody(stream, ""))
				complete := strings.Contains(out, "[DONE]")
				if !stream {
					complete = strings.Contains(out, `"finish_reason"`)
				}
				if code != http.StatusOK || !complete || strings.Contains(out, `"error"`) {
					t.Fatalf("status %d, body %q; want the working endpoint's whole answer", code, out)
				}
				line := f.access(t)[0]
				if line["endpoint"] != f.good || line["attempts"] != 2.0 || line["status"] != 200.0 {
					t.Errorf("access line %v; want 2 attempts ending on %s", line, f.good)
				}
			})
		}
	}
}

// A stream that breaks after its first byte reached the client, or ends cleanly without its
// [DONE], ends with an error event in OpenAI's shape and no [DONE]; the request counts as failed
// (502), and against the endpoint in outlier detection.
func TestFaultsAfterTheFirstByteEndTheStreamWithAnError(t *testing.T) {
	tests := []struct {
		fault   string
		message string // in the error event
	}{
		{"cut mid-answer", "vllm-a broke off the stream after 2 content chunks"},
		{"garbage mid-answer", "vllm-a broke off the stream after 2 content chunks"},
		// The connection closed cleanly: a truncation all the same, the answer is incomplete.
		{"end without [DONE]", "vllm-a ended the stream after 2 content chunks without data: [DONE]"},
	}
	for _, tt := range tests {
		name := tt.fault
		t.Run(name, func(t *testing.T) {
			f := newFaultRouter(t, 3, faults[name])
			code, out := postTo(t, f.url, chatBody(true, ""))
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, out)
			}
			events := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
			if len(events) != 3 || events[0]+"\n\n" != chunk("Hello") || events[1]+"\n\n" != chunk(" world") {
				t.Fatalf("client got %q; want the two chunks and an error event", out)
			}
			var ev struct {
				Error struct{ Message, Type, Code string }
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(events[2], "data: ")), &ev); err != nil ||
				ev.Error.Type != "server_error" || ev.Error.Code != "upstream_stream_broken" || !strings.Contains(ev.Error.Message, tt.message) {
				t.Errorf("last event %q (%v); want an OpenAI error saying %q", events[2], err, tt.message)
			}
			line := f.access(t)[0]
			if line["status"] != 502.0 || line["attempts"] != 1.0 || !strings.Contains(line["error"].(string), "stream broken after its first byte") {
				t.Errorf("access line %v; want a failed request (502) on one attempt", line)
			}
			if got := f.metric(t, "foresight_requests_total"); got["502"] != 1 || got["200"] != 0 {
				t.Errorf("foresight_requests_total %v; want 1 under code 502", got)
			}
			if st, _ := f.set.Get("vllm-a"); st.RequestFailures != 1 {
				t.Errorf("vllm-a has %d failed requests in a row; want the broken stream counted (1)", st.RequestFailures)
			}
		})
	}
}

// A request goes to at most maxAttempts endpoints, each once; past them it is a 502 naming every
// endpoint's failure.
func TestFailoverIsBoundedByMaxAttempts(t *testing.T) {
	f := newFaultRouter(t, 2, faults["5xx"], faults["accept and never answer"])
	code, out := postTo(t, f.url, chatBody(true, ""))
	if code != http.StatusBadGateway || !strings.Contains(out, "no answer from the 2 endpoints tried") ||
		!strings.Contains(out, "vllm-a: answered 500 Internal Server Error: {") || !strings.Contains(out, "vllm-b: no first byte within 300ms (server.firstByteTimeout)") {
		t.Fatalf("status %d, body %s; want a 502 naming both failures", code, out)
	}
	if line := f.access(t)[0]; line["attempts"] != 2.0 || line["status"] != 502.0 {
		t.Errorf("access line %v", line)
	}
}

// recovering is an engine that answers 5xx while broken holds, then a stream of one chunk.
func recovering(broken *atomic.Bool) fault {
	return func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			faults["5xx"](w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk("fine")+"data: [DONE]\n\n")
	}
}

// An endpoint whose requests keep failing while its /metrics answers is ejected: the requests
// that follow go straight to the others. It comes back after the ejection time and, recovered,
// serves again.
func TestAnEndpointWhoseRequestsKeepFailingIsEjectedAndComesBack(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	flaky := recovering(&broken)
	f := newFaultRouterWith(t, endpoints.Outlier{ConsecutiveFailures: 3, BaseEjectionTime: 1500 * time.Millisecond, MaxEjectionPercent: 50}, 3, flaky)
	for i := range 5 {
		if code, out := postTo(t, f.url, chatBody(true, "")); code != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i, code, out)
		}
	}
	attempts := []any{}
	for _, l := range f.access(t) {
		attempts = append(attempts, l["attempts"])
	}
	if want := []any{2.0, 2.0, 2.0, 1.0, 1.0}; !slices.Equal(attempts, want) {
		t.Errorf("attempts %v, want %v: three failovers, then vllm-a out of the rotation", attempts, want)
	}
	if st, _ := f.set.Get("vllm-a"); !st.Healthy || !st.Ejected {
		t.Errorf("vllm-a %+v; want healthy (its metrics answer) and ejected", st)
	}
	if got := f.metric(t, "foresight_endpoint_ejected"); got["vllm-a"] != 1 || got[f.good] != 0 {
		t.Errorf("foresight_endpoint_ejected %v", got)
	}
	broken.Store(false)
	waitFor(t, "vllm-a's return", func() bool { st, _ := f.set.Get("vllm-a"); return st.Routable() })
	if code, out := postTo(t, f.url, chatBody(true, "")); code != http.StatusOK || !strings.Contains(out, "fine") {
		t.Errorf("after its return: status %d, %q; want vllm-a's answer", code, out)
	}
	if got := f.metric(t, "foresight_endpoint_ejections_total"); got["vllm-a"] != 1 {
		t.Errorf("foresight_endpoint_ejections_total %v, want 1 for vllm-a", got)
	}
}

// A client that hangs up once it has [DONE] got the whole answer: the request counts as served
// (200), also when the engine holds its connection open after [DONE] and the router notices the
// client leave before the engine's end.
func TestAClientLeavingAfterDoneWasServed(t *testing.T) {
	lingering := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk("Hello")+"data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	f := newFaultRouter(t, 1, lingering)
	resp, err := http.Post(f.url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody(true, "")))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && sc.Text() != "data: [DONE]" {
	}
	resp.Body.Close()
	waitFor(t, "the access line", func() bool { return strings.TrimSpace(f.log.String()) != "" })
	if line := f.access(t)[0]; line["status"] != 200.0 || line["endpoint"] != "vllm-a" {
		t.Errorf("access line %v; want a served request (200) on vllm-a", line)
	}
}

// In a full outage every endpoint answers 5xx: outlier detection ejects what it may, never the
// last one in the rotation, which stays there (traffic finds it when it recovers) but is not
// healthy in foresight_endpoint_healthy until a request succeeds there.
func TestAFullOutageLeavesNoEndpointHealthy(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	flaky := recovering(&broken)
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, faults["5xx"])}, {ID: "vllm-b", Address: startFaulty(t, flaky)}}
	f := newRouterOver(t, endpoints.Config{Interval: 20 * time.Millisecond, Outlier: endpoints.Outlier{ConsecutiveFailures: 2, MaxEjectionPercent: 50}},
		eps, func(o *Options) { o.MaxAttempts = 2 })
	// Each request fails on vllm-a, then vllm-b: at the second, vllm-a is ejected and vllm-b, the
	// last in the rotation, is kept, failing.
	for range 2 {
		if code, out := postTo(t, f.url, chatBody(true, "")); code != http.StatusBadGateway {
			t.Fatalf("status %d: %s; want 502", code, out)
		}
	}
	healthy, ejected := f.metric(t, "foresight_endpoint_healthy"), f.metric(t, "foresight_endpoint_ejected")
	if healthy["vllm-b"] != 0 || ejected["vllm-b"] != 0 || ejected["vllm-a"] != 1 {
		t.Errorf("healthy %v, ejected %v; want vllm-a ejected and vllm-b, in the rotation, not healthy", healthy, ejected)
	}
	broken.Store(false)
	if code, out := postTo(t, f.url, chatBody(true, "")); code != http.StatusOK || !strings.Contains(out, "fine") {
		t.Fatalf("after vllm-b recovered: status %d, %q; want its answer", code, out)
	}
	if healthy := f.metric(t, "foresight_endpoint_healthy"); healthy["vllm-b"] != 1 {
		t.Errorf("healthy %v after vllm-b served; want it healthy", healthy)
	}
}
