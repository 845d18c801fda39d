package main

import (
	"context"
	"encoding/json"
	"io"
	"testing"
)

// TestBenchRoutingIsDeterministic runs a small routing bench twice: the same seed gives the same
// figures (wall times aside), the JSON has the documented shape, and an unavailable strategy is
// reported rather than faked.
func TestBenchRoutingIsDeterministic(t *testing.T) {
	o := routingOptions{scenario: "C", servers: 2, requests: 120, seed: 1, preset: "llama-3.1-8b-h100-tp2",
		noise: 0.05, strategies: "rr,load-prefix-322,oracle,predicted-latency", examples: "../../../examples"}
	run := func() map[string]any {
		res, err := benchRouting(context.Background(), o, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range res.Strategies {
			s.WallSeconds = 0
			res.Strategies[name] = s
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := run(), run()
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("two runs with seed 1 differ:\n%s\n%s", ja, jb)
	}
	strategies := a["strategies"].(map[string]any)
	for _, name := range []string{"rr", "load-prefix-322", "oracle"} {
		s, ok := strategies[name].(map[string]any)
		if !ok {
			t.Fatalf("strategy %q missing: %s", name, ja)
		}
		for _, k := range []string{"ttft_ms", "tpot_ms", "e2e_ms", "throughput_tok_s", "slo_attainment", "goodput_rps", "shed_rate", "prediction_mape"} {
			if _, ok := s[k]; !ok {
				t.Errorf("%s lacks %q", name, k)
			}
		}
		if p50 := s["ttft_ms"].(map[string]any)["p50"].(float64); p50 <= 0 {
			t.Errorf("%s: TTFT p50 %v", name, p50)
		}
	}
	if u, _ := strategies["predicted-latency"].(map[string]any)["unavailable"].(string); u == "" {
		t.Errorf("predicted-latency should be reported unavailable until the producer exists: %v", strategies["predicted-latency"])
	}
}
