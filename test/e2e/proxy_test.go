package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/bench"
)

// bench proxy runs the router as its own serve process and reports, per concurrency, the TTFT
// straight to the servers and through the router, the difference, and the router's CPU time per
// routed request; --trace gives the prompts a trace's lengths.
func TestBenchProxy(t *testing.T) {
	trace := writeAzureTrace(t, 8)
	stdout, stderr, code := foresight(t, "bench", "proxy", "--config", "examples/load-prefix-322.yaml", "--streams", "1,4",
		"--servers", "2", "--requests", "8", "--max-tokens", "2", "--rps-workers", "4", "--rps-for", "200ms", "--trace", trace, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res bench.ProxyResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	for _, k := range []string{"c1", "c4"} {
		d, r := res.DirectUs[k], res.RoutedUs[k]
		if res.Errors[k] != 0 || d.P50 <= 0 || r.P50 <= 0 || d.P99 < d.P50 || r.P99 < r.P50 {
			t.Errorf("%s: direct %+v, routed %+v, errors %d", k, d, r, res.Errors[k])
		}
		if a := res.AddedTTFTUs[k]; a.P50 != r.P50-d.P50 || a.P99 != r.P99-d.P99 {
			t.Errorf("%s: added %+v is not routed − direct", k, a)
		}
		if cpu, ok := res.RouterCPUMsPerRequest[k]; !ok || cpu < 0 {
			t.Errorf("%s: router CPU per request %v, %v", k, cpu, ok)
		}
	}
	// The trace's prompts: 64 + 29·i tokens for rows 0–7, 165.5 on average.
	if res.PromptTokens != 165.5 || res.MaxRPS <= 0 {
		t.Errorf("prompt tokens %v, max_rps %v", res.PromptTokens, res.MaxRPS)
	}
	_, stderr, code = foresight(t, "bench", "proxy", "--streams", "1,x")
	if code == 0 || !strings.Contains(stderr, "--streams") {
		t.Errorf("--streams 1,x: exit %d, %s", code, stderr)
	}
}
