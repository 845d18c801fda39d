package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/router"
	"github.com/foresight-router/foresight/plugins/producer/predictor"
	"github.com/foresight-router/foresight/sim/emulator"
)

// constantModel is a LightGBM v3 text model over n features whose single leaf predicts v.
func constantModel(n int, v float64) string {
	names := make([]string, n)
	infos := make([]string, n)
	for i := range names {
		names[i], infos[i] = fmt.Sprintf("f%d", i), "none"
	}
	tree := fmt.Sprintf("Tree=0\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\nthreshold=\ndecision_type=\n"+
		"left_child=\nright_child=\nleaf_value=%g\nleaf_weight=\nleaf_count=\ninternal_value=\ninternal_weight=\n"+
		"internal_count=\nis_linear=0\nshrinkage=1\n\n\n", v)
	return fmt.Sprintf("tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=%d\n"+
		"objective=regression\nfeature_names=%s\nfeature_infos=%s\ntree_sizes=%d\n\n%send of trees\n",
		n-1, strings.Join(names, " "), strings.Join(infos, " "), len(tree), tree)
}

// startRouter runs the real plugin binaries behind an in-process router in front of two emulated
// servers. The producer serves an operator's model that predicts a 1 s TTFT everywhere; the
// admitter sheds sheddable requests no endpoint is predicted to serve in time, cold ones included.
func startRouter(t *testing.T) (*router.Router, *emulator.Fleet) {
	t.Helper()
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	models := t.TempDir()
	ttftNames, tpotNames := predictor.Features()
	ttft, tpot := len(ttftNames), len(tpotNames)
	for file, text := range map[string]string{"ttft.txt": constantModel(ttft, 1000), "tpot.txt": constantModel(tpot, 10)} {
		if err := os.WriteFile(filepath.Join(models, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addrs := fleet.Addrs()
	yaml := fmt.Sprintf(`plugins:
  - name: predictor
    type: predicted-latency-producer
    path: ../bin/plugins/producer
    parameters: {modelDir: %s}
  - name: slo-admitter
    type: latency-slo-admitter
    path: ../bin/plugins/admitter
    parameters: {coldKVThreshold: 0}
  - name: rr
    type: round-robin-picker
pipeline:
  producer: {pluginRef: predictor}
  admitter: {pluginRef: slo-admitter}
  picker: {pluginRef: rr}
  stageTimeout: 5s
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
endpoints:
  static:
    - {id: a, address: %s}
    - {id: b, address: %s}
objectives:
  - {name: batch, priority: -1}
`, models, addrs[0], addrs[1])
	return startFile(t, writeConfig(t, "serve.yaml", yaml)), fleet
}

func chat(maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Tell me a long story."}],"max_tokens":%d,"stream":true}`,
		emulator.DefaultModel, maxTokens)
}

func post(t *testing.T, ctx context.Context, url, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// running sums vllm:num_requests_running over the fleet.
func running(t *testing.T, fleet *emulator.Fleet) int {
	t.Helper()
	n := 0
	for _, a := range fleet.Addrs() {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var v float64
			if line := sc.Text(); strings.HasPrefix(line, "vllm:num_requests_running{") {
				fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &v)
				n += int(v)
			}
		}
		resp.Body.Close()
	}
	return n
}

// TestServeShedsAndCancels: with a long request in flight on each endpoint (so none is idle), a
// sheddable request whose TTFT objective no endpoint is predicted to meet gets 429 with the
// admitter's reason, while a request that must be served is proxied; and a client that goes
// away cancels its request on the engine.
func TestServeShedsAndCancels(t *testing.T) {
	r, fleet := startRouter(t)
	url := "http://" + r.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 { // round-robin: one on each endpoint
		resp := post(t, ctx, url, chat(5000))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("long request: status %d", resp.StatusCode)
		}
		// Read the first event so the request is surely running, then leave it streaming.
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
	}
	if n := running(t, fleet); n != 2 {
		t.Fatalf("%d requests running on the fleet, want the 2 long ones", n)
	}

	resp := post(t, context.Background(), url, chat(5), "x-llm-d-slo-ttft-ms", "100", "x-llm-d-inference-objective", "batch")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "no endpoint meets the SLO") {
		t.Fatalf("sheddable late request: status %d, %s; want 429 with the admitter's reason", resp.StatusCode, body)
	}
	resp = post(t, context.Background(), url, chat(5), "x-llm-d-slo-ttft-ms", "100")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("priority-0 request: status %d, %s; want it served", resp.StatusCode, body)
	}

	// The producer's predictions reached the metrics, the access log and the samples.
	resp, err := http.Get("http://" + r.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"llm_d_epp_request_predicted_ttft_seconds_count 1\n", `foresight_requests_total{code="429"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	cancel() // both long clients go away: the router forgets them and the engines abort them
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := post(t, context.Background(), url, chat(1), "x-foresight-debug", "1")
		trace := resp.Header.Get("x-foresight-decision")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		var tr struct {
			Candidates []struct {
				State struct {
					Inflight int `json:"inflight_requests"`
				} `json:"state"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(trace), &tr); err != nil || len(tr.Candidates) != 2 {
			t.Fatalf("decision header %q: %v", trace, err)
		}
		if tr.Candidates[0].State.Inflight+tr.Candidates[1].State.Inflight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the router still counts requests in flight 10 s after their clients left: %s", trace)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for running(t, fleet) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still running on the engines 10 s after their clients left", running(t, fleet))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
