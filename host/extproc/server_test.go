package extproc

import (
	"context"
	"testing"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/foresight-router/foresight/internal/eventually"
)

// TestHealthFollowsTheRouter: the gateway's health checks see the picker alive from the start,
// ready (and its ext_proc service serving) only once the router is, and nothing serving once it
// shuts down, so that no new stream is sent to a picker that cannot decide.
func TestHealthFollowsTheRouter(t *testing.T) {
	s := New(Options{})
	check := func(svc string) healthpb.HealthCheckResponse_ServingStatus {
		r, err := s.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("%q: %v", svc, err)
		}
		return r.Status
	}
	serving, not := healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING
	extProc := extprocv3.ExternalProcessor_ServiceDesc.ServiceName
	steps := []struct {
		name string
		do   func()
		want map[string]healthpb.HealthCheckResponse_ServingStatus
	}{
		{"starting", func() {}, map[string]healthpb.HealthCheckResponse_ServingStatus{HealthLiveness: serving, HealthReadiness: not, extProc: not, "": not}},
		{"ready", func() { s.SetReady(true) }, map[string]healthpb.HealthCheckResponse_ServingStatus{HealthLiveness: serving, HealthReadiness: serving, extProc: serving, "": serving}},
		{"shutting down", s.Shutdown, map[string]healthpb.HealthCheckResponse_ServingStatus{HealthLiveness: not, HealthReadiness: not, extProc: not, "": not}},
	}
	for _, st := range steps {
		st.do()
		for svc, want := range st.want {
			if got := check(svc); got != want {
				t.Errorf("%s: %q is %v, want %v", st.name, svc, got, want)
			}
		}
	}
}

// TestAStreamTheGatewayCancelsEnds: a gateway that cancels its stream mid-exchange (its client
// went away) ends the exchange every time: the request leaves the in-flight ledger and Process
// returns, rather than waiting for a message that cannot come until the router shuts down. The
// stream's end is seen twice at once — its context done and Recv's error — and either must end
// it; twenty streams leave no room for the one that did not.
func TestAStreamTheGatewayCancelsEnds(t *testing.T) {
	f := newFixture(t, nil)
	conn := f.dial(t)
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := extprocv3.NewExternalProcessorClient(conn).Process(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []*extprocv3.ProcessingRequest{requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED), requestBody(streamed, true)} {
			if err := stream.Send(m); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := stream.Recv(); err != nil || r.GetRequestHeaders() == nil {
			t.Fatalf("the pick: %v, %v", r, err)
		}
		cancel()
	}
	eventually.Wait(t, 10*time.Second, "every cancelled request out of the ledger", func() bool {
		for _, n := range f.inflight() {
			if n != 0 {
				return false
			}
		}
		return true
	})
}
