package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/bench"
)

// bench proxy --reference nginx runs nginx beside the router in front of the same servers and
// reports both side by side: each one's CPU per request (its process tree), the split per token
// from the 20-token pass, and the TTFT each added, paired per request. It needs nginx installed.
func TestBenchProxyReferenceNginx(t *testing.T) {
	_, stderr, code := foresight(t, "bench", "proxy", "--streams", "1", "--reference", "haproxy")
	if code == 0 || !strings.Contains(stderr, `"haproxy"`) || !strings.Contains(stderr, "accepted: nginx") {
		t.Errorf("--reference haproxy: exit %d, %s", code, stderr)
	}
	if _, err := bench.FindNginx(); err != nil {
		t.Skipf("nginx is not installed: %v", err)
	}
	stdout, stderr, code := foresight(t, "bench", "proxy", "--config", "examples/least-load.yaml", "--streams", "1,3",
		"--servers", "2", "--requests", "6", "--max-tokens", "30", "--rps-workers", "2", "--rps-for", "200ms",
		"--reference", "nginx", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res bench.ProxyResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if res.Reference != "nginx" || res.ShortTokens != bench.ShortTokens || res.MaxTokens != 30 {
		t.Errorf("reference %q, short tokens %d, max tokens %d", res.Reference, res.ShortTokens, res.MaxTokens)
	}
	for _, name := range []string{"nginx", "router"} {
		p := res.Proxies[name]
		if p == nil {
			t.Fatalf("no figures for %s: %s", name, stdout)
		}
		for _, k := range []string{"c1", "c3"} {
			ttft, added := p.TTFTUs[k], p.AddedTTFTPairedUs[k]
			// Every request went through (6 at each concurrency), so the TTFTs are real ones and
			// the paired differences exist; a difference may be negative (noise), a TTFT not.
			if p.Errors[k] != 0 || ttft.P50 <= 0 || ttft.P99 < ttft.P50 || added.P99 < added.P50 {
				t.Errorf("%s %s: TTFT %+v, added %+v, errors %d", name, k, ttft, added, p.Errors[k])
			}
			_, cpu := p.CPUMsPerRequest[k]
			_, perToken := p.CPUUsPerToken[k]
			_, fixed := p.FixedCPUMsPerRequest[k]
			if !cpu || !perToken || !fixed || p.CPUMsPerRequest[k] < 0 {
				t.Errorf("%s %s: CPU per request %v (%v), per token %v, fixed %v", name, k, p.CPUMsPerRequest[k], cpu, perToken, fixed)
			}
		}
	}
	// The router's entry is the same requests as the top-level routed figures.
	if r := res.Proxies["router"]; r.TTFTUs["c3"] != res.RoutedUs["c3"] {
		t.Errorf("router TTFT %+v, routed %+v", r.TTFTUs["c3"], res.RoutedUs["c3"])
	}
}
