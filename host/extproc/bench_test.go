package extproc

import (
	"strings"
	"testing"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/proxy"
)

// BenchmarkExchange is the router's work for one request through the gateway, without the
// gRPC transport: the headers, the body in two pieces, the decision (an in-process round-robin
// pipeline over two endpoints), the answer's headers, a 64-token stream in 8 pieces relayed with
// its usage hidden, and the end of the request.
func BenchmarkExchange(b *testing.B) { benchExchange(b, nil) }

// BenchmarkExchangeFlowControl is BenchmarkExchange with flow control on (its defaults): the
// fast path of a pool that is not saturated, one lock and the detector's check per request.
func BenchmarkExchangeFlowControl(b *testing.B) {
	cfg, err := config.Parse("test.yaml", []byte("plugins:\n  - name: rr\n    type: round-robin-picker\npipeline:\n  picker: {pluginRef: rr}\nflowControl: {enabled: true}\n"))
	if err != nil {
		b.Fatal(err)
	}
	benchExchange(b, func(o *proxy.Options) { o.FlowControl = &cfg.FlowControl })
}

func benchExchange(b *testing.B, tune func(*proxy.Options)) {
	f := newFixture(b, tune)
	answer := sse(64)
	var pieces []string
	for i := range 8 {
		pieces = append(pieces, answer[i*len(answer)/8:(i+1)*len(answer)/8])
	}
	half := len(streamed) / 2
	b.ReportAllocs()
	for b.Loop() {
		x := f.exchange()
		handle(b, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
		handle(b, x, requestBody(streamed[:half], false))
		handle(b, x, requestBody(streamed[half:], true))
		handle(b, x, responseHeaders("200", ""))
		for i, p := range pieces {
			handle(b, x, responseBody(p, i == len(pieces)-1))
		}
		x.close("")
	}
	b.StopTimer()
	if !strings.Contains(f.log.String(), `"status":200`) {
		b.Fatal("no request served")
	}
}
