package extproc

import (
	"strings"
	"testing"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"

	"github.com/foresight-router/foresight/host/proxy"
)

// TestAWholeAnswerIsRenamedWhole: when the gateway asked for another model
// (x-gateway-model-name-rewrite), the whole answer carries the client's model back; the router
// holds its pieces until the end so that a name split across two pieces is renamed too (each held
// piece is answered with an empty one, the end with the whole answer renamed). A streamed answer
// is renamed event by event by the relay.
func TestAWholeAnswerIsRenamedWhole(t *testing.T) {
	const (
		asked  = `{"model":"alias","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`
		answer = `{"id":"x","object":"chat.completion","model":"served","choices":[{"index":0,"message":{"role":"assistant","content":"a \"model\":\"served\" b"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`
		want   = `{"id":"x","object":"chat.completion","model":"alias","choices":[{"index":0,"message":{"role":"assistant","content":"a \"model\":\"served\" b"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`
	)
	for _, mode := range []filterv3.ProcessingMode_BodySendMode{filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, filterv3.ProcessingMode_BUFFERED} {
		f := newFixture(t, func(o *proxy.Options) { o.UnknownModels = "route" })
		x := f.exchange()
		handle(t, x, requestHeaders(mode, proxy.HeaderModelRewrite, "served"))
		resps := handle(t, x, requestBody(asked, true))
		if resps[0].GetImmediateResponse() != nil {
			t.Fatalf("%s: refused %v", mode, resps[0])
		}
		var sent string
		for _, r := range resps {
			sent += string(r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody())
			sent += string(r.GetRequestBody().GetResponse().GetBodyMutation().GetBody())
		}
		if !strings.Contains(sent, `"model":"served"`) {
			t.Errorf("%s: sent on %s, want the rewritten model", mode, sent)
		}
		handle(t, x, responseHeaders("200", ""))
		pieces := []string{answer}
		if mode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
			cut := strings.Index(answer, `"served"`) + 4 // the name split across two pieces
			pieces = []string{answer[:cut], answer[cut:]}
		}
		var got string
		for i, p := range pieces {
			for _, r := range handle(t, x, responseBody(p, i == len(pieces)-1)) {
				c := r.GetResponseBody().GetResponse()
				got += string(c.GetBodyMutation().GetStreamedResponse().GetBody()) + string(c.GetBodyMutation().GetBody())
			}
		}
		if got != want {
			t.Errorf("%s: the client got\n%s\nwant\n%s", mode, got, want)
		}
	}
}
