package extproc

import (
	"context"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
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
