package extproc

import (
	"context"
	"encoding/json"
	"github.com/foresight-router/foresight/internal/logbuf"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/proxy"
)

// The fleet the gateway sends to; nothing listens there: the tests play the gateway and the
// engines' answers alike. Endpoints start in the rotation until a scrape says otherwise, and
// nothing scrapes them here.
var fleet = []endpoints.Endpoint{{ID: "a", Address: "10.0.0.1:8000"}, {ID: "b", Address: "http://10.0.0.2:8000"}}

// requestLines are the access log's request lines.
func requestLines(t *testing.T, log *logbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["message"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

type fixture struct {
	srv    *Server
	router *proxy.Server
	log    *logbuf.Buffer
}

func newFixture(t testing.TB, tune func(*proxy.Options)) *fixture {
	t.Helper()
	set, err := endpoints.New(endpoints.Config{}, fleet)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("test.yaml", []byte("plugins:\n  - name: rr\n    type: round-robin-picker\npipeline:\n  picker: {pluginRef: rr}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Build(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	logs := &logbuf.Buffer{}
	o := proxy.Options{Pipeline: p, Endpoints: set, MaxBodyBytes: 4096, Decisions: 8, PrefixBlocks: 1024, MaxAttempts: 3,
		MaxConcurrentRequests: 100, Log: zerolog.New(logs)}
	if tune != nil {
		tune(&o)
	}
	router, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: New(Options{Router: router, Log: zerolog.New(logs)}), router: router, log: logs}
}

// inflight is the router's requests in flight on each endpoint.
func (f *fixture) inflight() map[string]int64 {
	out := map[string]int64{}
	for _, g := range f.router.EndpointGauges() {
		out[g.ID] = g.Inflight
	}
	return out
}

func (f *fixture) exchange() *exchange { return &exchange{s: f.srv, ctx: context.Background()} }

func hdrs(kv ...string) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return m
}

func requestHeaders(mode filterv3.ProcessingMode_BodySendMode, kv ...string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: mode, ResponseBodyMode: mode},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: hdrs(append([]string{":method", "POST", ":path", "/v1/chat/completions"}, kv...)...)}}}
}

func requestBody(body string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: eos}}}
}

func responseHeaders(status, servedBy string) *extprocv3.ProcessingRequest {
	r := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: hdrs(":status", status, "content-type", "text/event-stream")}}}
	if servedBy != "" {
		r.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{MetadataNamespace: {
			Fields: map[string]*structpb.Value{ServedKey: structpb.NewStringValue(servedBy)}}}}
	}
	return r
}

func responseBody(body string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: eos}}}
}

func handle(t testing.TB, x *exchange, req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
	t.Helper()
	resps, err := x.handle(req)
	if err != nil {
		t.Fatalf("%T: %v", req.Request, err)
	}
	return resps
}

const streamed = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`

// decided runs a full-duplex request to its pick and returns the endpoints it names: the
// destination, then the fallback (single) or the rest of the list.
func decided(t *testing.T, x *exchange) []string {
	t.Helper()
	handle(t, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	p := pickOf(t, handle(t, x, requestBody(streamed, true))[0])
	if p.header != p.metadata {
		t.Fatalf("header %q, metadata %q: want the same", p.header, p.metadata)
	}
	out := strings.Split(p.header, ",")
	if p.fallback != "" {
		out = append(out, p.fallback)
	}
	return out
}

// pick is what the answer to a request's headers or body tells the data plane.
type pick struct{ header, metadata, fallback string }

func pickOf(t *testing.T, r *extprocv3.ProcessingResponse) pick {
	t.Helper()
	common := r.GetRequestHeaders().GetResponse()
	if common == nil {
		common = r.GetRequestBody().GetResponse()
	}
	var p pick
	for _, h := range common.GetHeaderMutation().GetSetHeaders() {
		if h.GetHeader().GetKey() == HeaderDestination {
			p.header = string(h.GetHeader().GetRawValue())
		}
	}
	md := r.GetDynamicMetadata().GetFields()[MetadataNamespace].GetStructValue().GetFields()
	p.metadata, p.fallback = md[HeaderDestination].GetStringValue(), md[FallbackKey].GetStringValue()
	if p.header == "" {
		t.Fatalf("no pick: %v", r)
	}
	return p
}

// sse is an OpenAI stream of n tokens, then its usage chunk and [DONE].
func sse(n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n")
	}
	b.WriteString(`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// TestAFallbackThatServedIsCounted: when the gateway says the second pick served the request,
// the first pick's attempt ends and the request is counted, and logged, on the second.
func TestAFallbackThatServedIsCounted(t *testing.T) {
	f := newFixture(t, nil)
	x := f.exchange()
	dest := decided(t, x)
	if len(dest) != 2 || f.inflight()["a"]+f.inflight()["b"] != 1 {
		t.Fatalf("picked %v, in flight %v: want both endpoints, one request in flight", dest, f.inflight())
	}
	handle(t, x, responseHeaders("200", dest[1]))
	if in := f.inflight(); in[idOf(dest[1])] != 1 || in[idOf(dest[0])] != 0 {
		t.Fatalf("in flight %v after the fallback %s served: want it there only", in, dest[1])
	}
	handle(t, x, responseBody(sse(3), true))
	x.close("")
	if in := f.inflight(); in["a"]+in["b"] != 0 {
		t.Fatalf("in flight %v after the answer", in)
	}
	line := requestLines(t, f.log)[0]
	if line["endpoint"] != idOf(dest[1]) || line["attempts"] != 2.0 || line["status"] != 200.0 {
		t.Errorf("access line %v: want the fallback, 2 attempts, 200", line)
	}
}

// TestTheDestinationsForm: single names one endpoint in the header and the metadata and the
// second pick in the fallback key; list names the picks, server.maxAttempts in all, in both.
// The fleet is a (10.0.0.1:8000) and b (10.0.0.2:8000); round robin picks a first, then b.
func TestTheDestinationsForm(t *testing.T) {
	tests := []struct {
		name        string
		destination string
		maxAttempts int
		want        pick
	}{
		{"single, a fallback", config.DestinationSingle, 3, pick{"10.0.0.1:8000", "10.0.0.1:8000", "10.0.0.2:8000"}},
		{"unset is single", "", 3, pick{"10.0.0.1:8000", "10.0.0.1:8000", "10.0.0.2:8000"}},
		{"single, one attempt: no fallback", config.DestinationSingle, 1, pick{"10.0.0.1:8000", "10.0.0.1:8000", ""}},
		{"list", config.DestinationList, 3, pick{"10.0.0.1:8000,10.0.0.2:8000", "10.0.0.1:8000,10.0.0.2:8000", ""}},
		{"list, one attempt", config.DestinationList, 1, pick{"10.0.0.1:8000", "10.0.0.1:8000", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []filterv3.ProcessingMode_BodySendMode{filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, filterv3.ProcessingMode_BUFFERED} {
				f := newFixture(t, func(o *proxy.Options) { o.MaxAttempts = tt.maxAttempts })
				f.srv.o.Destination = tt.destination
				x := f.exchange()
				handle(t, x, requestHeaders(mode))
				if got := pickOf(t, handle(t, x, requestBody(streamed, true))[0]); got != tt.want {
					t.Errorf("%s: told the gateway %+v, want %+v", mode, got, tt.want)
				}
			}
		})
	}
}

func idOf(hostport string) string {
	for _, e := range fleet {
		if e.HostPort() == hostport {
			return e.ID
		}
	}
	return ""
}

// TestAStreamCutByTheGatewayIs499: the gateway ending the exchange mid-answer (its client left)
// is a 499, not the endpoint's failure, and the request leaves the ledger.
func TestAStreamCutByTheGatewayIs499(t *testing.T) {
	f := newFixture(t, nil)
	x := f.exchange()
	decided(t, x)
	handle(t, x, responseHeaders("200", ""))
	resps := handle(t, x, responseBody(`data: {"choices":[{"index":0,"delta":{"content":"x"}}]}`+"\n\ndata: {\"cho", false))
	if got := string(resps[0].GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody()); !strings.HasSuffix(got, "\n\n") || strings.Count(got, "data:") != 1 {
		t.Errorf("the client got %q: want the whole first event and nothing of the second yet", got)
	}
	x.close("the gateway ended the exchange before the answer did")
	line := requestLines(t, f.log)[0]
	if line["status"] != 499.0 || !strings.Contains(line["error"].(string), "gateway ended") {
		t.Errorf("access line %v: want 499 with the gateway's cause", line)
	}
	if in := f.inflight(); in["a"]+in["b"] != 0 {
		t.Errorf("in flight %v after the gateway left", in)
	}
}

// TestAnEngineErrorIsItsStatus: an endpoint's 5xx passes through and counts as its failure.
func TestAnEngineErrorIsItsStatus(t *testing.T) {
	f := newFixture(t, nil)
	x := f.exchange()
	decided(t, x)
	handle(t, x, responseHeaders("503", ""))
	resps := handle(t, x, responseBody(`{"error":"overloaded"}`, true))
	if got := string(resps[0].GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody()); got != `{"error":"overloaded"}` {
		t.Errorf("the client got %q: want the engine's error as it was", got)
	}
	x.close("")
	if line := requestLines(t, f.log)[0]; line["status"] != 503.0 {
		t.Errorf("access line %v: want 503", line)
	}
}

// TestBodyBounds: a body over server.maxBodyBytes, and a buffered-partial body Envoy cut short,
// are 413 immediate responses.
func TestBodyBounds(t *testing.T) {
	f := newFixture(t, nil)
	x := f.exchange()
	handle(t, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	handle(t, x, requestBody(strings.Repeat("x", 3000), false))
	resps := handle(t, x, requestBody(strings.Repeat("x", 3000), true))
	if code := resps[0].GetImmediateResponse().GetStatus().GetCode(); code != 413 {
		t.Errorf("a 6000-byte body over a 4096 bound: %v, want 413", resps)
	}
	x = f.exchange()
	handle(t, x, requestHeaders(filterv3.ProcessingMode_BUFFERED_PARTIAL))
	resps = handle(t, x, requestBody(`{"model":"m","messages":[`, false))
	if code := resps[0].GetImmediateResponse().GetStatus().GetCode(); code != 413 {
		t.Errorf("a partial buffered body: %v, want 413", resps)
	}
	if in := f.inflight(); in["a"]+in["b"] != 0 {
		t.Errorf("in flight %v after refusals", in)
	}
}

// TestRequestTrailersEndTheBody: in full-duplex mode, request trailers end the body: the pick,
// the body sent on without end of stream, then the trailers' answer.
func TestRequestTrailersEndTheBody(t *testing.T) {
	f := newFixture(t, nil)
	x := f.exchange()
	handle(t, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	handle(t, x, requestBody(streamed, false))
	resps := handle(t, x, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{
		RequestTrailers: &extprocv3.HttpTrailers{}}})
	if len(resps) != 3 || resps[0].GetRequestHeaders() == nil || resps[2].GetRequestTrailers() == nil {
		t.Fatalf("answers %v: want the pick, the body, the trailers", resps)
	}
	body := resps[1].GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
	if body.GetEndOfStream() || !strings.Contains(string(body.GetBody()), `"include_usage":true`) {
		t.Errorf("body sent on %v: want the rewritten body, not ending the stream (trailers follow)", body)
	}
}

// TestWhatThePickerRefuses: observability mode, a body before the headers, and a streamed
// request body mode are gRPC errors, on which the gateway applies its failure mode.
func TestWhatThePickerRefuses(t *testing.T) {
	f := newFixture(t, nil)
	obs := requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
	obs.ObservabilityMode = true
	for name, req := range map[string]*extprocv3.ProcessingRequest{
		"observability mode":    obs,
		"a body first":          requestBody(streamed, true),
		"streamed request body": requestHeaders(filterv3.ProcessingMode_STREAMED),
		"answer before request": responseHeaders("200", ""),
	} {
		if _, err := f.exchange().handle(req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}

// TestOverTheConcurrencyBound: past server.maxConcurrentRequests the picker answers 429 and the
// count comes back when exchanges close.
func TestOverTheConcurrencyBound(t *testing.T) {
	f := newFixture(t, func(o *proxy.Options) { o.MaxConcurrentRequests = 1 })
	held := f.exchange()
	handle(t, held, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	x := f.exchange()
	resps := handle(t, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	if code := resps[0].GetImmediateResponse().GetStatus().GetCode(); code != 429 || !strings.Contains(string(resps[0].GetImmediateResponse().GetBody()), "router_busy") {
		t.Fatalf("over the bound: %v, want 429 router_busy", resps)
	}
	x.close("")
	held.close("")
	x = f.exchange()
	handle(t, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	if resps := handle(t, x, requestBody(streamed, true)); resps[0].GetImmediateResponse() != nil {
		t.Errorf("after both closed: %v, want a pick", resps)
	}
}

// TestBufferedBodyBeforeTrailers: a buffered body that trailers follow comes without end of
// stream; it is whole, so the pick answers it (Envoy waits for that answer before the trailers),
// and the trailers then pass.
func TestBufferedBodyBeforeTrailers(t *testing.T) {
	f := newFixture(t, nil)
	x := f.exchange()
	if resps := handle(t, x, requestHeaders(filterv3.ProcessingMode_BUFFERED)); resps[0].GetRequestHeaders() == nil {
		t.Fatalf("buffered headers: %v, want them answered at once", resps)
	}
	resps := handle(t, x, requestBody(streamed, false))
	if resps[0].GetRequestBody().GetResponse().GetHeaderMutation() == nil || resps[0].GetDynamicMetadata() == nil {
		t.Fatalf("buffered body: %v, want the pick", resps)
	}
	trailers := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{}}}
	if resps := handle(t, x, trailers); len(resps) != 1 || resps[0].GetRequestTrailers() == nil {
		t.Errorf("trailers after the pick: %v", resps)
	}
}

// TestARefusalEndsTheExchangeAtTrailers: when the body that trailers end is refused, the
// immediate response is the last answer.
func TestARefusalEndsTheExchangeAtTrailers(t *testing.T) {
	f := newFixture(t, nil)
	x := f.exchange()
	handle(t, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	handle(t, x, requestBody(`{"model":`, false))
	resps := handle(t, x, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{}}})
	if len(resps) != 1 || resps[0].GetImmediateResponse().GetStatus().GetCode() != 400 {
		t.Errorf("a bad body ended by trailers: %v, want one 400 immediate response", resps)
	}
}
