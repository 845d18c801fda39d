package transport

import (
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestReadPaths(t *testing.T) {
	tests := []struct {
		name    string
		reads   []string
		wantErr string
		check   func(*sdk.Cycle) bool
	}{
		{"everything", nil, "", func(c *sdk.Cycle) bool {
			return c.Endpoints[0].ID == "a:1" && c.Request.ID == "r" && len(c.Excluded) == 2
		}},
		{"count only", []string{"endpoints.count"}, "", func(c *sdk.Cycle) bool {
			return len(c.Endpoints) == 2 && c.Endpoints[0].ID == "" && c.Request.ID == "" && c.Seed == 42 && c.Excluded == nil
		}},
		{"excluded alone", []string{"endpoints.excluded"}, "", func(c *sdk.Cycle) bool {
			x := c.Excluded
			return len(x) == 2 && x[0].ID == "c:3" && x[0].Labels["topology.kubernetes.io/zone"] == "z1" &&
				x[0].Reason == "unhealthy" && x[1].ID == "d:4" && x[1].Reason == "ejected" && c.Endpoints[0].ID == "" && c.Endpoints[1].Labels == nil
		}},
		{"request and predictions", []string{"request", "endpoints.predictions"}, "", func(c *sdk.Cycle) bool {
			return c.Request.ID == "r" && c.Request.InputTokens == 900 && c.Request.SLO.TTFTMs == 500 && c.Request.Labels["tenant"] == "a" &&
				len(c.Request.PrefixBlockHashes) == 0 && c.Endpoints[1].Prediction.TTFTMs == 80 && c.Endpoints[0].State.Waiting == 0
		}},
		{"request with its hashes", []string{"request", "request.prefix_block_hashes"}, "", func(c *sdk.Cycle) bool {
			return c.Request.ID == "r" && len(c.Request.PrefixBlockHashes) == 3
		}},
		{"the hashes alone", []string{"request.prefix_block_hashes"}, "", func(c *sdk.Cycle) bool {
			return c.Request.ID == "" && len(c.Request.PrefixBlockHashes) == 3
		}},
		{"all state columns", []string{"endpoints.states"}, "", func(c *sdk.Cycle) bool {
			return c.Endpoints[0].State.Waiting == 3 && c.Endpoints[0].State.MetricsAgeMs == 12 && !c.Endpoints[1].Prediction.Valid
		}},
		{"ids and labels", []string{"endpoints.ids", "endpoints.labels"}, "", func(c *sdk.Cycle) bool {
			return c.Endpoints[1].ID == "b:2" && c.Endpoints[1].Labels["role"] == "decode" && c.Excluded == nil
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
