package proxy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/emulator"
)

// keepFirst is a scheduler whose filters keep one endpoint, the first by ID, as strict session
// affinity does: its order holds that endpoint alone.
type keepFirst struct{}

func (keepFirst) Run(_ context.Context, c *sdk.Cycle) *pipeline.Trace {
	first := 0
	for i, e := range c.Endpoints {
		if e.ID < c.Endpoints[first].ID {
			first = i
		}
	}
	return &pipeline.Trace{RequestID: c.Request.ID, Candidates: c.Endpoints, Admitted: true, Order: []int{first}}
}

// When the endpoints of the pipeline's order all fail before the first byte, the request goes on
// to the other endpoints with room, the fewest requests in flight first, up to
// server.maxAttempts; the access line and the decision trace say it left the order, and why.
func TestFailoverGoesBeyondTheOrderWhenItFailed(t *testing.T) {
	tests := []struct {
		name        string
		kept        func(t *testing.T) endpoints.Endpoint // the one endpoint the filters keep
		maxAttempts int
		busy        string // an endpoint holding one request in flight ("" none)
		status      int
		served      string   // the endpoint that answered ("" none)
		beyond      []string // the endpoints tried beyond the order
	}{
		// vllm-b and vllm-c have room, none in flight: by id, vllm-b.
		{name: "5xx", kept: faulty("5xx"), maxAttempts: 3, status: 200, served: "vllm-b", beyond: []string{"vllm-b"}},
		{name: "refused connection", kept: refusing, maxAttempts: 3, status: 200, served: "vllm-b", beyond: []string{"vllm-b"}},
		// vllm-b holds a request: vllm-c, with none, goes first.
		{name: "least in flight first", kept: faulty("5xx"), maxAttempts: 3, busy: "vllm-b", status: 200, served: "vllm-c", beyond: []string{"vllm-c"}},
		// server.maxAttempts 1 leaves no attempt beyond the order: the 502 of one endpoint tried.
		{name: "no attempt left", kept: faulty("5xx"), maxAttempts: 1, status: 502},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(fleet.Close)
			eps := []endpoints.Endpoint{tt.kept(t), {ID: "vllm-b", Address: fleet.Addrs()[0]}, {ID: "vllm-c", Address: fleet.Addrs()[1]}}
			// A scrape a minute apart keeps a refusing endpoint in the rotation for the test.
			f := newRouterOver(t, endpoints.Config{Interval: time.Minute}, eps, func(o *Options) {
				o.Pipeline, o.MaxAttempts = keepFirst{}, tt.maxAttempts
			})
			if tt.busy != "" {
				f.srv.dispatch(&sdk.Request{ID: "held"}, sdk.Endpoint{ID: tt.busy}, nil)
			}
			code, out := postTo(t, f.url, chatBody(true, ""))
			if code != tt.status {
				t.Fatalf("status %d, body %s; want %d", code, out, tt.status)
			}
			line := f.access(t)[0]
			var beyond []string
			for _, id := range asSlice(line["beyond_order"]) {
				beyond = append(beyond, id.(string))
			}
			if !slices.Equal(beyond, tt.beyond) || (tt.served != "" && line["endpoint"] != tt.served) {
				t.Errorf("access line %v; want %s to serve, beyond the order %v", line, tt.served, tt.beyond)
			}
			if tt.status != 200 {
				if !strings.Contains(out, "no answer from the 1 endpoints tried") {
					t.Errorf("body %s; want the one endpoint tried named", out)
				}
				return
			}
			d := f.srv.Decisions()
			if len(d) != 1 || !slices.Equal(d[0].BeyondOrder, tt.beyond) ||
				!strings.Contains(d[0].BeyondReason, "the 1 endpoints of the pipeline's order failed before the first byte") {
				t.Errorf("kept decisions %+v; want the attempt beyond the order and why", d)
			}
		})
	}
}

// faulty is an endpoint "a-faulty" whose completion routes do the named fault (its /metrics
// answers).
func faulty(name string) func(t *testing.T) endpoints.Endpoint {
	return func(t *testing.T) endpoints.Endpoint {
		return endpoints.Endpoint{ID: "a-faulty", Address: startFaulty(t, faults[name])}
	}
}

// refusing is an endpoint "a-dead" nothing listens on.
func refusing(t *testing.T) endpoints.Endpoint {
	return endpoints.Endpoint{ID: "a-dead", Address: deadAddress(t)}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
