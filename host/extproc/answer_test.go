package extproc

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/proxy"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/rs/zerolog"
)

// A request flow control answered itself carries its reason in the immediate response under
// both header names, as the OpenAI front sends it; any other refusal carries neither.
func TestADroppedRequestCarriesItsReason(t *testing.T) {
	e := &openai.Error{Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Code: "ttl_expired", Message: "waited its TTL"}
	tests := []struct {
		name, reason string
	}{
		{"dropped", "ttl-expired"},
		{"refused otherwise", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := errorResponse(e, "req-1")
			droppedHeaders(r, tt.reason)
			ir := r.GetImmediateResponse()
			got := map[string]string{}
			for _, h := range ir.GetHeaders().GetSetHeaders() {
				got[h.GetHeader().GetKey()] = string(h.GetHeader().GetRawValue())
			}
			if ir.GetStatus().GetCode() != http.StatusTooManyRequests || got["x-request-id"] != "req-1" {
				t.Errorf("status %d, headers %v; want 429 with the request id", ir.GetStatus().GetCode(), got)
			}
			if got[proxy.HeaderDroppedReason] != tt.reason || got[proxy.HeaderDroppedReasonAlias] != tt.reason {
				t.Errorf("reason headers %q and %q, want %q in both", got[proxy.HeaderDroppedReason], got[proxy.HeaderDroppedReasonAlias], tt.reason)
			}
		})
	}
}

// flowFixture is newFixture with flow control on (extra: more of the section) and a detector
// that allows one request in flight per endpoint: the fixture's two endpoints hold two. Its
// pipeline is built from the same config, as the router's is, so that the pipeline's flow
// control stages are the section's built-ins.
func flowFixture(t *testing.T, extra string) (*fixture, *prometheus.Registry) {
	t.Helper()
	cfg, err := config.Parse("flow.yaml", []byte("plugins:\n  - name: rr\n    type: round-robin-picker\npipeline:\n  picker: {pluginRef: rr}\n"+
		"flowControl:\n  enabled: true\n  detector: {maxInflight: 1}\n"+extra))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.NewFlowControl(reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Build(context.Background(), cfg, zerolog.Nop()) // its flow stages are the section's
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	f := newFixture(t, func(o *proxy.Options) { o.Pipeline, o.FlowControl, o.FlowMetrics = p, &cfg.FlowControl, m })
	t.Cleanup(f.router.Close)
	return f, reg
}

// queuedIn reads foresight_flow_queue_requests{band="0"}.
func queuedIn(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "foresight_flow_queue_requests" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// Behind a gateway, a request the pool is saturated for holds its ext_proc answer while it
// waits, and gets its pick when a request in flight ends.
func TestAQueuedRequestHoldsItsAnswer(t *testing.T) {
	f, reg := flowFixture(t, "")
	first, second := f.exchange(), f.exchange()
	decided(t, first)
	decided(t, second)
	third := f.exchange()
	handle(t, third, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	type answer struct {
		resps []*extprocv3.ProcessingResponse
		err   error
	}
	picked := make(chan answer, 1)
	go func() { // the body's answer is the pick, held while the request waits
		resps, err := third.handle(requestBody(streamed, true))
		picked <- answer{resps, err}
	}()
	eventually.Wait(t, 10*time.Second, "the third request queued", func() bool { return queuedIn(t, reg) == 1 })
	handle(t, first, responseHeaders("200", ""))
	handle(t, first, responseBody(sse(3), true)) // the answer ends: its endpoint has room
	a := <-picked
	if a.err != nil || len(a.resps) == 0 || a.resps[0].GetImmediateResponse() != nil ||
		a.resps[0].GetDynamicMetadata().GetFields()[MetadataNamespace].GetStructValue().GetFields()[HeaderDestination].GetStringValue() == "" {
		t.Fatalf("the queued request: %v (%v), want a pick", a.resps, a.err)
	}
	second.close("")
	third.close("")
}

// Behind a gateway, a request shed at its TTL is an immediate 429 with the reason headers.
func TestAShedRequestIsAnImmediate429(t *testing.T) {
	f, _ := flowFixture(t, "  default: {ttl: 50ms}\n")
	first, second := f.exchange(), f.exchange()
	decided(t, first)
	decided(t, second)
	x := f.exchange()
	handle(t, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
	resps := handle(t, x, requestBody(streamed, true))
	ir := resps[0].GetImmediateResponse()
	got := map[string]string{}
	for _, h := range ir.GetHeaders().GetSetHeaders() {
		got[h.GetHeader().GetKey()] = string(h.GetHeader().GetRawValue())
	}
	if ir.GetStatus().GetCode() != http.StatusTooManyRequests || !strings.Contains(string(ir.GetBody()), `"ttl_expired"`) ||
		got[proxy.HeaderDroppedReason] != "ttl-expired" || got[proxy.HeaderDroppedReasonAlias] != "ttl-expired" {
		t.Errorf("immediate response %d %s, headers %v; want 429 ttl_expired with both reason headers", ir.GetStatus().GetCode(), ir.GetBody(), got)
	}
	first.close("")
	second.close("")
}
