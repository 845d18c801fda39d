package sdk

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// prefixReader is a filter that reads only prefix_match and reports what it saw.
type prefixReader struct {
	echoStage
	saw chan *Cycle
}

func (p *prefixReader) Reads() []string { return []string{"endpoints.states.prefix_match"} }

func (p *prefixReader) Filter(_ context.Context, c *Cycle) (FilterVerdict, error) {
	p.saw <- c
	kept := make([]int, len(c.Endpoints))
	for i := range kept {
		kept[i] = i
	}
	return FilterVerdict{Kept: kept}, nil
}

func TestHostSendsOnlyDeclaredFields(t *testing.T) {
	impl := &prefixReader{saw: make(chan *Cycle, 1)}
	c := dispense(t, StageFilter, impl).(*FilterClient)
	info, err := c.Info(context.Background())
	if err != nil || !cmp.Equal(info.Reads, []string{"endpoints.states.prefix_match"}) {
		t.Fatalf("info %+v, %v; want the declared reads", info, err)
	}
	full := testCycle("r")
	if _, err := c.FilterBatch(context.Background(), []*Cycle{full}); err != nil {
		t.Fatal(err)
	}
	got := <-impl.saw
	// Only prefix_match, the count, now and seed cross the wire; everything else reads as zero.
	want := &Cycle{Now: full.Now, Seed: full.Seed, Endpoints: []Endpoint{
		{State: EndpointState{PrefixMatch: 0.5}}, {State: EndpointState{PrefixMatch: 1}},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Cycle{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("cycle the plugin saw (-want +got):\n%s", diff)
	}
}

func TestReadPaths(t *testing.T) {
	tests := []struct {
		name    string
		reads   []string
		wantErr string
		check   func(*Cycle) bool
	}{
		{"everything", nil, "", func(c *Cycle) bool { return c.Endpoints[0].ID == "a:1" && c.Request.ID == "r" }},
		{"count only", []string{"endpoints.count"}, "", func(c *Cycle) bool {
			return len(c.Endpoints) == 2 && c.Endpoints[0].ID == "" && c.Request.ID == "" && c.Seed == 42
		}},
		{"request and predictions", []string{"request", "endpoints.predictions"}, "", func(c *Cycle) bool {
			return c.Request.ID == "r" && c.Request.InputTokens == 900 && c.Request.SLO.TTFTMs == 500 && c.Request.Labels["tenant"] == "a" &&
				len(c.Request.PrefixBlockHashes) == 0 && c.Endpoints[1].Prediction.TTFTMs == 80 && c.Endpoints[0].State.Waiting == 0
		}},
		{"request with its hashes", []string{"request", "request.prefix_block_hashes"}, "", func(c *Cycle) bool {
			return c.Request.ID == "r" && len(c.Request.PrefixBlockHashes) == 3
		}},
		{"the hashes alone", []string{"request.prefix_block_hashes"}, "", func(c *Cycle) bool {
			return c.Request.ID == "" && len(c.Request.PrefixBlockHashes) == 3
		}},
		{"all state columns", []string{"endpoints.states"}, "", func(c *Cycle) bool {
			return c.Endpoints[0].State.Waiting == 3 && c.Endpoints[0].State.MetricsAgeMs == 12 && !c.Endpoints[1].Prediction.Valid
		}},
		{"ids and labels", []string{"endpoints.ids", "endpoints.labels"}, "", func(c *Cycle) bool {
			return c.Endpoints[1].ID == "b:2" && c.Endpoints[1].Labels["role"] == "decode"
		}},
		{"unknown column", []string{"endpoints.states.queue"}, `unknown read path "endpoints.states.queue"`, nil},
		{"unknown field", []string{"endpoint"}, `unknown read path "endpoint"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ProjectCycle(testCycle("r"), tt.reads)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Errorf("projection %q: got %+v, %v", tt.reads, got, err)
			}
		})
	}
	for _, p := range ReadPaths() {
		if _, err := compileReads([]string{p}); err != nil {
			t.Errorf("ReadPaths lists %q but compileReads rejects it: %v", p, err)
		}
	}
}
