package extproc

import (
	"fmt"
	"testing"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// TestPathsRouteBySuffix: the path's suffix says how the body is read, as the inference
// extension's picker reads it; every request goes to an endpoint (the router answers none but
// a body its API does not parse), by the pipeline when the router reads the body, by load only
// otherwise.
func TestPathsRouteBySuffix(t *testing.T) {
	const completion = `{"model":"m","prompt":"hi","max_tokens":3}`
	tests := []struct {
		name, method, path, body string // body "": the headers end the request
		want                     string // "pipeline", "load-only", or the immediate response's status
	}{
		{"models, no body", "GET", "/v1/models", "", "load-only"},
		{"a completion without a body", "POST", "/v1/chat/completions", "", "load-only"},
		{"chat", "POST", "/v1/chat/completions", streamed, "pipeline"},
		{"chat with a query string", "POST", "/v1/chat/completions?api-version=1", streamed, "pipeline"},
		{"a prefixed completion", "POST", "/llama/v1/completions", completion, "pipeline"},
		{"a completion body that does not parse", "POST", "/v1/completions", streamed, "400"},
		{"embeddings", "POST", "/v1/embeddings", `{"model":"m","input":"hi"}`, "pipeline"},
		{"prefixed embeddings", "POST", "/llama/v1/embeddings", `{"model":"m","input":["hi","there"]}`, "pipeline"},
		{"embeddings that do not parse", "POST", "/v1/embeddings", `{"model":"m"}`, "400"},
		{"responses", "POST", "/v1/responses", `{"model":"m","input":"hi"}`, "pipeline"},
		{"responses that do not parse", "POST", "/v1/responses", `{"model":"m","input":[]}`, "400"},
		{"conversations holding a completion", "POST", "/v1/conversations", completion, "pipeline"},
		{"conversations", "POST", "/v1/conversations", `{"items":[]}`, "load-only"},
		{"another path holding a completion", "POST", "/v2/generate", completion, "pipeline"},
		{"another path", "POST", "/v2/generate", `not json`, "load-only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []filterv3.ProcessingMode_BodySendMode{filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, filterv3.ProcessingMode_BUFFERED} {
				f := newFixture(t, nil)
				x := f.exchange()
				headers := requestHeaders(mode, ":method", tt.method, ":path", tt.path)
				headers.GetRequestHeaders().EndOfStream = tt.body == ""
				resps := handle(t, x, headers)
				if tt.body != "" {
					resps = handle(t, x, requestBody(tt.body, true))
				}
				got := "pipeline"
				switch {
				case resps[0].GetImmediateResponse() != nil:
					got = fmt.Sprint(int(resps[0].GetImmediateResponse().GetStatus().GetCode()))
				case x.routed.Opaque():
					got = "load-only"
				}
				if got != tt.want {
					t.Fatalf("%s: %s %s went %s; want %s (%v)", mode, tt.method, tt.path, got, tt.want, resps)
				}
				if got == "load-only" {
					checkPassedOn(t, resps, tt.body, mode)
				}
			}
		})
	}
}

// checkPassedOn checks the answer to a load-only pick: the pick in the headers' or body's answer,
// and the body as it came, unread. A request without a body gets the headers' answer alone,
// without content-length.
func checkPassedOn(t *testing.T, resps []*extprocv3.ProcessingResponse, body string, mode filterv3.ProcessingMode_BodySendMode) {
	t.Helper()
	pickOf(t, resps[0])
	var sent []byte
	for _, r := range resps {
		if c := r.GetRequestBody().GetResponse(); c != nil {
			sent = append(sent, c.GetBodyMutation().GetBody()...)
			sent = append(sent, c.GetBodyMutation().GetStreamedResponse().GetBody()...)
		}
	}
	if body == "" {
		if len(resps) != 1 || resps[0].GetRequestHeaders() == nil {
			t.Errorf("%s: answers %v; want the headers' answer alone", mode, resps)
		}
		for _, h := range resps[0].GetRequestHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
			if h.GetHeader().GetKey() == "content-length" {
				t.Errorf("%s: content-length set on a request without a body", mode)
			}
		}
	}
	if string(sent) != body {
		t.Errorf("%s: the body sent on %q; want %q as it came", mode, sent, body)
	}
}

// TestALoadOnlyRequestEndToEnd: GET /v1/models through the gateway goes to an endpoint, is in
// flight there until its answer ends, which passes through as the engine wrote it, and gets its
// access line.
func TestALoadOnlyRequestEndToEnd(t *testing.T) {
	f := newFixture(t, nil)
	x := f.exchange()
	get := requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, ":method", "GET", ":path", "/v1/models")
	get.GetRequestHeaders().EndOfStream = true
	if p := pickOf(t, handle(t, x, get)[0]); p.header != "10.0.0.1:8000" || p.fallback != "10.0.0.2:8000" {
		t.Errorf("pick %+v; want a, then b", p)
	}
	if in := f.inflight(); in["a"] != 1 {
		t.Fatalf("in flight %v; want the request on a", in)
	}
	handle(t, x, responseHeaders("200", ""))
	models := `{"object":"list","data":[{"id":"m","object":"model"}]}`
	resps := handle(t, x, responseBody(models, true))
	if got := string(resps[0].GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody()); got != models {
		t.Errorf("the client got %q; want the engine's answer as it was", got)
	}
	x.close("")
	if in := f.inflight(); in["a"]+in["b"] != 0 {
		t.Errorf("in flight %v after the answer", in)
	}
	if line := requestLines(t, f.log)[0]; line["status"] != 200.0 || line["load_only"] != true || line["endpoint"] != "a" {
		t.Errorf("access line %v; want 200 on a, load_only", line)
	}
}
