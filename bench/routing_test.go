package bench

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchRoutingIsDeterministic runs a small routing bench twice: the same seed gives the same
// figures (wall times aside) and the JSON has the documented shape.
func TestBenchRoutingIsDeterministic(t *testing.T) {
	o := RoutingOptions{Scenario: "C", Servers: 2, Requests: 120, Seed: 1, Preset: "llama-3.1-8b-h100-tp2",
		Noise: 0.05, Strategies: "rr,load-prefix-322,oracle", Examples: "../examples"}
	run := func() map[string]any {
		res, err := RunRouting(context.Background(), o)
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
}

// A predicted-latency pipeline without a producer is reported unavailable, not run as if it had
// predictions.
func TestPredictedLatencyWithoutProducerIsUnavailable(t *testing.T) {
	dir := t.TempDir()
	yaml := "plugins:\n  - name: q\n    type: queue-scorer\npipeline:\n  scorers:\n    - pluginRef: q\n"
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	o := RoutingOptions{Scenario: "C", Servers: 2, Requests: 20, Seed: 1, Preset: "llama-3.1-8b-h100-tp2",
		Strategies: "predicted-latency,rr", Examples: dir}
	_, err := newStrategy(context.Background(), "predicted-latency", o, nil)
	var u unavailable
	if !errors.As(err, &u) || !strings.Contains(u.reason, "no producer") {
		t.Fatalf("got %v, want the strategy reported unavailable for lack of a producer", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "round-robin.yaml"), []byte("plugins:\n  - name: rr\n    type: round-robin-picker\npipeline:\n  picker:\n    pluginRef: rr\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := RunRouting(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Strategies["predicted-latency"]; s.Unavailable == "" || s.Summary != nil {
		t.Errorf("predicted-latency = %+v, want only an unavailability reason", s)
	}
	if s := res.Strategies["rr"]; s.Summary == nil || s.Requests != 20 {
		t.Errorf("rr = %+v, want a summary of 20 requests", s)
	}
	file := filepath.Join(dir, "report.html")
	if err := res.WriteReport(file); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(file)
	if err != nil || !strings.HasPrefix(string(page), "<!DOCTYPE html>") || !strings.Contains(string(page), "no producer") {
		t.Errorf("report: %v, %.80q…", err, page)
	}
}

// TestStrategyFromAConfigPath: a strategy ending in .yaml is a pipeline config of the operator's
// own, run and named by its path, with the same figures as the example it copies; any other
// unknown name is an error that lists what is known.
func TestStrategyFromAConfigPath(t *testing.T) {
	own := filepath.Join(t.TempDir(), "mine.yaml")
	yaml, err := os.ReadFile("../examples/round-robin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	o := RoutingOptions{Scenario: "C", Servers: 2, Requests: 40, Seed: 1, Preset: "llama-3.1-8b-h100-tp2",
		Strategies: "rr," + own, Examples: "../examples"}
	res, err := RunRouting(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	rr, mine := res.Strategies["rr"].Summary, res.Strategies[own].Summary
	if rr == nil || mine == nil || rr.TTFTMs != mine.TTFTMs {
		t.Fatalf("rr %+v, %s %+v: want the same figures", rr, own, mine)
	}
	if _, err := newStrategy(context.Background(), "nosuch", o, nil); err == nil || !strings.Contains(err.Error(), "FILE.yaml") {
		t.Errorf("an unknown strategy: %v", err)
	}
}

// TestSchedulingProfiles: a config of profiles runs each request in the profile its handler
// chooses by the request's SLO: with every request under an objective the figures are the SLO
// profile's (least-load), with none the default profile's (round-robin).
func TestSchedulingProfiles(t *testing.T) {
	own := filepath.Join(t.TempDir(), "profiles.yaml")
	yaml := `plugins:
  - {name: round-robin, type: round-robin-picker}
  - {name: least-inflight, type: queue-scorer, parameters: {source: inflight}}
  - {name: max-score, type: max-score-picker}
profiles:
  - name: default
    pipeline: {picker: {pluginRef: round-robin}}
  - name: slo
    pipeline: {scorers: [{pluginRef: least-inflight}], picker: {pluginRef: max-score}}
profileHandler: {sloProfile: slo}
`
	if err := os.WriteFile(own, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		classes []string
		same    string
	}{
		{nil, "rr"},
		{[]string{"chat:1:ttft=1000"}, "least-load"},
	} {
		o := RoutingOptions{Scenario: "C", Servers: 3, Requests: 200, Seed: 1, Preset: "llama-3.1-8b-h100-tp2",
			Strategies: "rr,least-load," + own, Examples: "../examples", Classes: tc.classes}
		res, err := RunRouting(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		want, got := res.Strategies[tc.same].Summary, res.Strategies[own].Summary
		if want == nil || got == nil || want.TTFTMs != got.TTFTMs {
			t.Errorf("classes %v: profiles %+v, want %s's %+v", tc.classes, got, tc.same, want)
		}
		other := map[string]string{"rr": "least-load", "least-load": "rr"}[tc.same]
		if res.Strategies[other].Summary.TTFTMs == want.TTFTMs {
			t.Errorf("classes %v: rr and least-load gave the same figures: the test tells nothing", tc.classes)
		}
	}
}

// Each strategy's figures are also kept per server: round-robin over 2 servers serves 60 requests
// on each, and the servers' requests add up to those served.
func TestRoutingKeepsFiguresPerServer(t *testing.T) {
	res, err := RunRouting(context.Background(), RoutingOptions{Scenario: "C", Servers: 2, Requests: 120, Seed: 1,
		Preset: "llama-3.1-8b-h100-tp2", Strategies: "rr,least-load", Examples: "../examples"})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range res.Strategies {
		served := 0
		for _, ss := range s.Servers {
			served += ss.Requests
		}
		if len(s.Servers) != 2 || served != s.Requests-int(s.ShedRate*float64(s.Requests)+0.5) {
			t.Errorf("%s: %d servers with %d requests, want 2 with the %d served", name, len(s.Servers), served, s.Requests)
		}
	}
	if rr := res.Strategies["rr"].Servers; rr["sim-0"].Requests != 60 || rr["sim-1"].Requests != 60 {
		t.Errorf("round-robin per server: %d and %d requests, want 60 each", rr["sim-0"].Requests, rr["sim-1"].Requests)
	}
	var text strings.Builder
	res.WriteTable(&text)
	if !strings.Contains(text.String(), "per server") || !strings.Contains(text.String(), "sim-1") {
		t.Errorf("the table has no per-server rows:\n%s", text.String())
	}
}
