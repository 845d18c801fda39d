package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/foresight-router/foresight/sim/emulator"
)

// gieRequest is one client request through an Inference Extension gateway.
type gieRequest struct {
	method, path string
	// rewrite, when set, is the path the gateway's HTTPRoute sends upstream (a URLRewrite): the
	// picker sees path, the pod gets rewrite.
	rewrite string
	body    string // "" sends no body: the headers end the request
	headers []string
	subset  []string // the gateway's subset hint (nil: none)
}

// gieGateway plays the data plane of the Inference Extension's reference Envoy configuration: an
// ext_proc filter in full-duplex mode both ways and an ORIGINAL_DST cluster that reads
// x-gateway-destination-endpoint as one ip:port. A value it cannot parse as exactly one address
// fails the test, as Envoy fails the request (503).
type gieGateway struct{ *envoy }

// do runs r through the gateway: the picker's answer to its headers and body, then, when it
// picked, the pod's answer replayed through the picker.
func (g gieGateway) do(r gieRequest) trip {
	t := g.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := g.open(ctx)
	defer func() { _ = st.s.CloseSend() }()
	var tr trip
	method := cmp.Or(r.method, http.MethodPost)
	first := &extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: g.reqMode, ResponseBodyMode: g.respMode},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers:     headers(append([]string{":method", method, ":path", r.path, "content-type", "application/json"}, r.headers...)...),
			EndOfStream: r.body == ""}}}
	if r.subset != nil {
		var vals []*structpb.Value
		for _, s := range r.subset {
			vals = append(vals, structpb.NewStringValue(s))
		}
		first.MetadataContext = metadata("envoy.lb.subset_hint", "x-gateway-destination-endpoint-subset", structpb.NewListValue(&structpb.ListValue{Values: vals}))
	}
	st.send(t, first)
	if r.body != "" {
		half := len(r.body) / 2
		for i, p := range []string{r.body[:half], r.body[half:]} {
			st.send(t, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
				RequestBody: &extprocv3.HttpBody{Body: []byte(p), EndOfStream: i == 1}}})
		}
	}
	pick := st.recv(t)
	if tr.immediate = pick.GetImmediateResponse(); tr.immediate != nil {
		return tr
	}
	common := pick.GetRequestHeaders().GetResponse()
	if common == nil || !common.ClearRouteCache {
		t.Fatalf("%s %s: the pick %v is not a headers answer that clears the route cache", method, r.path, pick)
	}
	tr.readPick(pick, common)
	if tr.destination != tr.metadata {
		t.Fatalf("%s %s: header %q and metadata %q disagree", method, r.path, tr.destination, tr.metadata)
	}
	if host, port, err := net.SplitHostPort(tr.destination); err != nil || net.ParseIP(host) == nil || port == "" {
		t.Fatalf("%s %s: an ORIGINAL_DST cluster cannot route to %q (want one ip:port): %v", method, r.path, tr.destination, err)
	}
	if r.body != "" {
		tr.upstream = st.sentOn(t)
	}
	g.upstream(st, &tr, method, cmp.Or(r.rewrite, r.path))
	return tr
}

// upstream sends the request to the picked pod and replays its answer through the picker in
// full-duplex mode: headers with the endpoint that served, then the body as it comes.
func (g gieGateway) upstream(st *stream, tr *trip, method, path string) {
	t := g.t
	t.Helper()
	var body io.Reader = http.NoBody
	if tr.upstream != nil {
		body = bytes.NewReader(tr.upstream)
	}
	req, err := http.NewRequest(method, "http://"+tr.destination+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tr.status = resp.StatusCode
	st.send(t, &extprocv3.ProcessingRequest{
		MetadataContext: metadata("envoy.lb", "x-gateway-destination-endpoint-served", structpb.NewStringValue(tr.destination)),
		Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: headers(":status", fmt.Sprint(resp.StatusCode), "content-type", resp.Header.Get("Content-Type"))}}})
	if r := st.recv(t); r.GetResponseHeaders() == nil {
		t.Fatalf("answer to the response headers: %v", r)
	}
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			g.bodyPiece(st, tr, buf[:n], false)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	g.bodyPiece(st, tr, nil, true)
}

// TestEndpointPickerConformance plays the Inference Extension's reference gateway — full-duplex
// ext_proc and an ORIGINAL_DST cluster that takes one ip:port — in front of `foresight serve
// --ext-proc` with its defaults (server.maxAttempts 3) and three emulated servers, and checks what
// such a gateway and its clients expect of an endpoint picker: one destination per answer (the
// second pick as the fallback key), every API a pool serves routed by the path's suffix (prefixed
// paths too), requests without a body and GET /v1/models sent to a pod, bodies the router cannot
// read as an inference request passed through, models no pod lists routed to the pool,
// x-gateway-model-name-rewrite applied and undone in the answer, GIE's objective header read and
// unknown objectives served at the default priority, a malformed x-request-id replaced, the
// subset hint honoured and large bodies chunked.
func TestEndpointPickerConformance(t *testing.T) {
	fleet, err := emulator.Start(3, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	addrs := fleet.Addrs()
	yaml := fmt.Sprintf(`plugins:
  - {name: least-inflight, type: queue-scorer, parameters: {source: inflight}}
  - {name: max-score, type: max-score-picker}
pipeline:
  scorers: [{pluginRef: least-inflight}]
  picker: {pluginRef: max-score}
objectives:
  - {name: batch, priority: -1}
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
endpoints:
  static:
    - {id: a, address: %s}
    - {id: b, address: %s}
    - {id: c, address: %s}
`, addrs[0], addrs[1], addrs[2])
	p := startServe(t, writeConfig(t, "gie.yaml", yaml), "--ext-proc", "127.0.0.1:0")
	_, duplex := dialPicker(t, p.extProc)
	gw := gieGateway{duplex}
	model := emulator.DefaultModel
	chat := func(extra string) string {
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Through the gateway: what is an endpoint picker?"}],"max_tokens":4%s}`, model, extra)
	}
	served := func(t *testing.T, tr trip, what string) {
		t.Helper()
		if tr.immediate != nil {
			t.Fatalf("%s: the picker answered itself %d %s, want a pick", what, tr.immediate.GetStatus().GetCode(), tr.immediate.GetBody())
		}
		if !slices.Contains(addrs, tr.destination) {
			t.Fatalf("%s: picked %q, not a pod of the pool %v", what, tr.destination, addrs)
		}
	}

	t.Run("one destination, the second pick as the fallback", func(t *testing.T) {
		tr := gw.do(gieRequest{path: "/v1/chat/completions", body: chat(`,"stream":true`)})
		served(t, tr, "a streamed chat completion")
		if !slices.Contains(addrs, tr.fallback) || tr.fallback == tr.destination {
			t.Errorf("fallback %q: want another pod of the pool than the pick %q", tr.fallback, tr.destination)
		}
		if tr.status != http.StatusOK || !strings.HasSuffix(string(tr.answer), "data: [DONE]\n\n") {
			t.Errorf("the client got %d %q", tr.status, tr.answer)
		}
	})
	t.Run("the API by the path's suffix", func(t *testing.T) {
		for _, c := range []struct {
			name     string
			req      gieRequest
			status   int
			upstream string // what the body sent on must hold ("" nothing to check)
			answer   string // what the client's answer must hold
		}{
			{"a prefixed completion, rewritten by the route",
				gieRequest{path: "/llama/v1/completions", rewrite: "/v1/completions",
					body: fmt.Sprintf(`{"model":%q,"prompt":"Once upon a time","max_tokens":3,"stream":true}`, model)},
				http.StatusOK, `"include_usage":true`, "data: [DONE]"},
			{"embeddings",
				gieRequest{path: "/v1/embeddings", body: fmt.Sprintf(`{"model":%q,"input":["a routed embedding","and another"]}`, model)},
				http.StatusOK, "", `"prompt_tokens"`},
			{"a streamed response",
				gieRequest{path: "/v1/responses", body: fmt.Sprintf(`{"model":%q,"input":"Say hello.","max_output_tokens":3,"stream":true}`, model)},
				http.StatusOK, "", "response.completed"},
			{"a whole response",
				gieRequest{path: "/v1/responses", body: fmt.Sprintf(`{"model":%q,"input":[{"role":"user","content":"Say hello."}],"max_output_tokens":2}`, model)},
				http.StatusOK, "", `"output_tokens":2`},
			{"a body that is no inference request goes through (the emulator has no conversations: 404)",
				gieRequest{path: "/v1/conversations", body: `{"items":[{"type":"message","role":"user","content":"kept by the pod"}]}`},
				http.StatusNotFound, `"items"`, ""},
			{"GET /v1/models goes to a pod",
				gieRequest{method: http.MethodGet, path: "/v1/models"},
				http.StatusOK, "", model},
			{"a POST without a body goes to a pod, which refuses it",
				gieRequest{path: "/v1/completions"},
				http.StatusBadRequest, "", ""},
		} {
			tr := gw.do(c.req)
			served(t, tr, c.name)
			if tr.status != c.status || !strings.Contains(string(tr.answer), c.answer) {
				t.Errorf("%s: the client got %d %.300q, want %d holding %q", c.name, tr.status, tr.answer, c.status, c.answer)
			}
			if !strings.Contains(string(tr.upstream), c.upstream) {
				t.Errorf("%s: the pod got %s, want %q in it", c.name, tr.upstream, c.upstream)
			}
		}
	})
	t.Run("models", func(t *testing.T) {
		tr := gw.do(gieRequest{path: "/v1/chat/completions", body: strings.Replace(chat(""), model, "an-adapter-loaded-on-demand", 1)})
		served(t, tr, "a model no pod lists")
		tr = gw.do(gieRequest{path: "/v1/chat/completions", body: strings.Replace(chat(""), model, "client-alias", 1),
			headers: []string{"x-gateway-model-name-rewrite", model}})
		served(t, tr, "a rewritten model")
		var up, answer struct{ Model string }
		if json.Unmarshal(tr.upstream, &up) != nil || up.Model != model {
			t.Errorf("the pod got model %q (%s), want the rewrite %q", up.Model, tr.upstream, model)
		}
		if json.Unmarshal(tr.answer, &answer) != nil || answer.Model != "client-alias" {
			t.Errorf("the client got model %q (%.200s), want its own name back", answer.Model, tr.answer)
		}
	})
	t.Run("headers", func(t *testing.T) {
		for _, kv := range [][]string{
			{"x-gateway-inference-objective", "batch"},
			{"x-gateway-inference-objective", "an-objective-nobody-declared"},
			{"x-llm-d-inference-objective", "an-objective-nobody-declared"},
		} {
			served(t, gw.do(gieRequest{path: "/v1/chat/completions", body: chat(""), headers: kv}), strings.Join(kv, ": "))
		}
		tr := gw.do(gieRequest{path: "/v1/chat/completions", body: chat(""), headers: []string{"x-request-id", "an id with spaces"}})
		served(t, tr, "a malformed x-request-id")
		if tr.requestID == "" || strings.Contains(tr.requestID, " ") {
			t.Errorf("x-request-id %q: want a generated one in place of the malformed one", tr.requestID)
		}
	})
	t.Run("subset and large bodies", func(t *testing.T) {
		big := strings.Replace(chat(""), "what is an endpoint picker?", strings.Repeat("a long prompt ", 10_000), 1)
		for range 3 {
			tr := gw.do(gieRequest{path: "/v1/chat/completions", body: big, subset: []string{addrs[2]}})
			served(t, tr, "a large body with a subset")
			if tr.destination != addrs[2] || len(tr.upstream) != len(big) || tr.status != http.StatusOK {
				t.Errorf("a %d-byte body with the subset [%s]: picked %q, sent on %d bytes, answered %d", len(big), addrs[2], tr.destination, len(tr.upstream), tr.status)
			}
		}
		tr := gw.do(gieRequest{path: "/v1/chat/completions", body: chat(""), subset: []string{"10.0.0.1:8000"}})
		if code, msg := immediateBody(t, tr.immediate); code != http.StatusServiceUnavailable {
			t.Errorf("a subset of unknown endpoints: %d %s, want 503", code, msg)
		}
	})
}
