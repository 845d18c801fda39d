package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
)

// inflightOn is the router's requests in flight on each endpoint.
func inflightOn(srv *Server) map[string]int64 {
	out := map[string]int64{}
	for _, g := range srv.EndpointGauges() {
		out[g.ID] = g.Inflight
	}
	return out
}

// TestALoadOnlyPickGoesToTheLeastLoaded: requests the router does not read go, without the
// pipeline, to the endpoint with the fewest of the router's requests in flight, ties in the
// endpoint set's order (a, then b), server.maxAttempts (2) destinations in all; they are counted
// in flight until Finish.
func TestALoadOnlyPickGoesToTheLeastLoaded(t *testing.T) {
	srv, _, _ := newGatewayRouter(t)
	var held []*Routed
	route := func() []string {
		r, ref := srv.RouteOpaque(context.Background(), http.Header{}, "", nil, time.Now(), nil)
		if ref != nil {
			t.Fatalf("refused: %+v", ref.Err)
		}
		held = append(held, r)
		return r.Destinations()
	}
	// Nothing in flight: a tie, a first.
	if got := route(); !slices.Equal(got, []string{"10.0.0.1:8000", "10.0.0.2:8000"}) {
		t.Errorf("first pick %v; want a then b", got)
	}
	// a holds one, b none: b first.
	if got := route(); !slices.Equal(got, []string{"10.0.0.2:8000", "10.0.0.1:8000"}) {
		t.Errorf("second pick %v; want b then a", got)
	}
	// One each: a tie again, a first.
	if got := route(); got[0] != "10.0.0.1:8000" {
		t.Errorf("third pick %v; want a first", got)
	}
	if in := inflightOn(srv); in["a"] != 2 || in["b"] != 1 {
		t.Errorf("in flight %v; want a 2, b 1", in)
	}
	for _, r := range held {
		r.Status(http.StatusOK)
		r.Finish("")
	}
	if in := inflightOn(srv); in["a"]+in["b"] != 0 {
		t.Errorf("in flight %v after the answers; want none", in)
	}
}

// TestALoadOnlyPickIsCountedButNotRead: its trace and access line say load_only; its answer,
// whatever it holds, is not read: no failure for an answer that is not OpenAI's, no prefix record.
func TestALoadOnlyPickIsCountedButNotRead(t *testing.T) {
	srv, set, logs := newGatewayRouter(t)
	r, ref := srv.RouteOpaque(context.Background(), http.Header{"X-Foresight-Debug": {"1"}}, "", []byte(`{"input":"x"}`), time.Now(), nil)
	if ref != nil {
		t.Fatalf("refused: %+v", ref.Err)
	}
	if string(r.Body()) != `{"input":"x"}` || !r.Opaque() {
		t.Errorf("body %q, opaque %v; want the body as it came, opaque", r.Body(), r.Opaque())
	}
	if d := string(r.Decision()); !strings.Contains(d, `"load_only":true`) {
		t.Errorf("decision %s; want load_only", d)
	}
	r.Status(http.StatusOK)
	r.Whole([]byte(`{"data":[{"embedding":[0.1]}]}`))
	r.Finish("")
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &line); err != nil {
		t.Fatal(err)
	}
	if line["status"] != 200.0 || line["load_only"] != true || line["endpoint"] != "a" {
		t.Errorf("access line %v; want 200 on a, load_only", line)
	}
	if st, _ := set.Get("a"); st.RequestFailures != 0 || srv.prefix.Len("a") != 0 {
		t.Errorf("a: %d failures, %d prefix blocks; want neither", st.RequestFailures, srv.prefix.Len("a"))
	}
	if ds := srv.Decisions(); len(ds) != 1 || !ds[0].LoadOnly {
		t.Errorf("decisions %v; want the load-only pick", ds)
	}
}

// TestALoadOnlyPickKeepsToTheSubset: the gateway's subset hint bounds it; a subset of endpoints
// the router does not know is the protocol's 503.
func TestALoadOnlyPickKeepsToTheSubset(t *testing.T) {
	tests := []struct {
		name   string
		only   func(endpoints.Endpoint) bool
		want   []string
		status int
	}{
		{"b only", func(e endpoints.Endpoint) bool { return e.ID == "b" }, []string{"10.0.0.2:8000"}, 0},
		{"unknown endpoints", func(endpoints.Endpoint) bool { return false }, nil, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _, _ := newGatewayRouter(t)
			r, ref := srv.RouteOpaque(context.Background(), http.Header{}, "", nil, time.Now(), tt.only)
			if tt.status != 0 {
				if ref == nil || ref.Err.Status != tt.status {
					t.Fatalf("got %v, %+v; want %d", r, ref, tt.status)
				}
				return
			}
			if ref != nil {
				t.Fatalf("refused: %+v", ref.Err)
			}
			defer r.Finish("")
			if got := r.Destinations(); !slices.Equal(got, tt.want) {
				t.Errorf("picked %v; want %v", got, tt.want)
			}
		})
	}
}
