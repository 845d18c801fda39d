package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/producer/predictor"
)

// TestProfilesChosenPerRequest runs the router with examples/profiles.yaml's two profiles — the
// built-in load + prefix scorers, and the predicted-latency plugins — in front of two emulated
// servers: a request without an SLO is decided by the default profile, one with an SLO header by
// the slo profile's plugin processes, one naming a profile by that profile, one naming an unknown
// profile is refused; the trace and /metrics say which profile decided.
func TestProfilesChosenPerRequest(t *testing.T) {
	fleet := startFleet(t)
	models := t.TempDir()
	ttftNames, tpotNames := predictor.Features()
	// The producer serves a model predicting 100 ms TTFT and 10 ms TPOT everywhere, so the slo
	// profile's stages see predictions from the first request.
	for file, text := range map[string]string{"ttft.txt": constantModel(len(ttftNames), 100), "tpot.txt": constantModel(len(tpotNames), 10)} {
		if err := os.WriteFile(filepath.Join(models, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "examples", "profiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(data)
	// The predictor's parameters open with monotone (as examples/pipeline.yaml); modelDir joins them.
	if !strings.Contains(yaml, "    parameters:\n      monotone: true") {
		t.Fatal("examples/profiles.yaml: the predictor's parameters no longer open with monotone: true; update this test")
	}
	yaml = strings.Replace(yaml, "    parameters:\n      monotone: true", "    parameters:\n      modelDir: "+models+"\n      monotone: true", 1)
	yaml = strings.Replace(yaml, "  listen: 127.0.0.1:8080\n  adminListen: 127.0.0.1:9090", "  listen: 127.0.0.1:0\n  adminListen: 127.0.0.1:0", 1)
	addrs := fleet.Addrs()
	yaml = strings.Replace(yaml, "    - {id: vllm-0, address: 127.0.0.1:8000}\n    - {id: vllm-1, address: 127.0.0.1:8001}",
		fmt.Sprintf("    - {id: a, address: %s}\n    - {id: b, address: %s}", addrs[0], addrs[1]), 1)
	r := startFile(t, writeConfig(t, "profiles-e2e.yaml", yaml))

	// decided sends one request with headers and returns its status and the profile its decision
	// trace names.
	decided := func(headers ...string) (int, string) {
		t.Helper()
		resp := post(t, context.Background(), "http://"+r.Addr(), chat(4), append([]string{"x-foresight-debug", "1"}, headers...)...)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var trace struct {
			Profile string `json:"profile"`
			Stages  []struct{ Plugin string }
		}
		if h := resp.Header.Get("x-foresight-decision"); h != "" {
			if err := json.Unmarshal([]byte(h), &trace); err != nil {
				t.Fatalf("decision %s: %v", h, err)
			}
		}
		if resp.StatusCode == 200 && !strings.Contains(string(body), "[DONE]") {
			t.Fatalf("incomplete answer: %s", body)
		}
		if resp.StatusCode != 200 {
			return resp.StatusCode, string(body)
		}
		return resp.StatusCode, trace.Profile
	}
	for _, tc := range []struct {
		name    string
		headers []string
		want    string
	}{
		{"no SLO", nil, "default"},
		{"an SLO header", []string{"x-llm-d-slo-ttft-ms", "500"}, "slo"},
		{"GIE's boolean", []string{"x-prediction-based-routing", "true"}, "slo"},
		{"the interactive objective", []string{"x-llm-d-inference-objective", "interactive"}, "slo"},
		{"the profile named over an SLO", []string{"x-foresight-profile", "default", "x-llm-d-slo-ttft-ms", "500"}, "default"},
	} {
		if code, profile := decided(tc.headers...); code != 200 || profile != tc.want {
			t.Errorf("%s: %d, profile %q; want 200 from %q", tc.name, code, profile, tc.want)
		}
	}
	code, body := decided("x-foresight-profile", "fast")
	if code != 400 || !strings.Contains(body, `no scheduling profile \"fast\": the router's are default, slo`) ||
		!strings.Contains(body, `"param":"x-foresight-profile"`) {
		t.Errorf("an unknown profile: %d %s, want a 400 naming the header and the profiles", code, body)
	}
	if n := metric(t, r, `foresight_decisions_total{outcome="picked",profile="slo"}`); n != 3 {
		t.Errorf("slo decisions %v, want 3", n)
	}
	if n := metric(t, r, `foresight_decisions_total{outcome="picked",profile="default"}`); n != 2 {
		t.Errorf("default decisions %v, want 2", n)
	}
	if n := metric(t, r, `foresight_stage_duration_seconds_count{plugin="predictor",profile="slo",stage="producer"}`); n != 3 {
		t.Errorf("producer calls in the slo profile %v, want 3", n)
	}
	d := describe(t, r)
	if len(d.Profiles) != 2 || d.Profiles[1].Name != "slo" || len(d.Profiles[1].Slots) != 6 || d.DefaultProfile != "default" {
		t.Errorf("GET /admin/pipeline profiles %+v", d.Profiles)
	}
}
