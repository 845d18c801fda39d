package extproc

import (
	"strings"
	"testing"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/foresight-router/foresight/host/proxy"
	"github.com/foresight-router/foresight/internal/eventually"
)

// TestCutEndsEachStep: at the end of the shutdown grace each exchange still open ends with the
// router's 503 router_shutting_down as far as its step allows, logged and counted as a 503, and
// leaves the in-flight ledger.
func TestCutEndsEachStep(t *testing.T) {
	tests := []struct {
		name string
		to   func(t *testing.T, x *exchange) // brings x to its step
		want string                          // what the data plane gets: "immediate" or "event"
	}{
		{"reading the body", func(t *testing.T, x *exchange) {
			handle(t, x, requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED))
		}, "immediate"},
		{"waiting for the answer", func(t *testing.T, x *exchange) { decided(t, x) }, "immediate"},
		{"streaming the answer, an event cut in two", func(t *testing.T, x *exchange) {
			decided(t, x)
			handle(t, x, responseHeaders("200", ""))
			handle(t, x, responseBody(`data: {"choices":[{"index":0,"delta":{"content":"x"}}]}`+"\n\ndata: {\"cho", false))
		}, "event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			x := f.exchange()
			tt.to(t, x)
			resps, err := x.cut()
			x.close("the gateway ended the exchange before the answer did")
			if err != nil {
				t.Fatalf("cut: %v", err)
			}
			switch last := resps[len(resps)-1]; tt.want {
			case "immediate":
				ir := last.GetImmediateResponse()
				if ir.GetStatus().GetCode() != 503 || !strings.Contains(string(ir.GetBody()), `"code":"router_shutting_down"`) {
					t.Errorf("the data plane got %v: want an immediate 503 router_shutting_down", last)
				}
			case "event":
				sb := last.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse()
				// The half event the relay held never reaches the client: the error event follows the
				// whole first one.
				if body := string(sb.GetBody()); !sb.GetEndOfStream() || !strings.HasPrefix(body, `data: {"error"`) ||
					!strings.Contains(body, `"code":"router_shutting_down"`) {
					t.Errorf("the last piece of the answer is %q (end of stream %v): want the error event, ending the body", body, sb.GetEndOfStream())
				}
			}
			if line := requestLines(t, f.log)[0]; line["status"] != 503.0 {
				t.Errorf("access line %v: want 503", line)
			}
			if in := f.inflight(); in["a"]+in["b"] != 0 {
				t.Errorf("in flight %v after the cut", in)
			}
		})
	}
}

// TestCutReachesAnOpenStream: Cut ends a stream waiting for its body through Process, and the
// stream ends there.
func TestCutReachesAnOpenStream(t *testing.T) {
	f := newFixture(t, func(o *proxy.Options) { o.MaxConcurrentRequests = 1 })
	stream := f.serve(t)
	if err := stream.Send(requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED)); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 5*time.Second, "the request to hold the only slot", func() bool {
		if f.router.Enter() != nil {
			return true
		}
		f.router.Leave()
		return false
	})
	f.srv.Cut()
	if code, body := immediateError(t, stream); code != 503 || !strings.Contains(body, "server.shutdownGrace") {
		t.Errorf("immediate response %d %s: want 503 naming server.shutdownGrace", code, body)
	}
	if _, err := stream.Recv(); err == nil {
		t.Error("the stream goes on after the cut")
	}
}

// TestCutAnswersARequestWaitingInTheQueue: a request waiting for its decision in flow control's
// queue when the grace ends gets the router's immediate 503 at once, not the end of its stream.
func TestCutAnswersARequestWaitingInTheQueue(t *testing.T) {
	f, reg := flowFixture(t, "")
	first, second := f.exchange(), f.exchange()
	decided(t, first) // two endpoints of one request each: the pool is full
	decided(t, second)
	stream := f.serve(t)
	for _, m := range []*extprocv3.ProcessingRequest{requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED), requestBody(streamed, true)} {
		if err := stream.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	eventually.Wait(t, 10*time.Second, "the third request queued", func() bool { return queuedIn(t, reg) == 1 })
	f.srv.Cut()
	if code, body := immediateError(t, stream); code != 503 || !strings.Contains(body, `"code":"router_shutting_down"`) {
		t.Errorf("immediate response %d %s: want 503 router_shutting_down", code, body)
	}
	first.close("")
	second.close("")
}
