package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/eventually"
)

// TestFlowControlBurstDrainsInDeadlineOrder: flow-control.yaml's pipeline of real plugin
// processes in front of two emulated servers, its detector bounded to one request in flight per
// server (maxInflight: 1: an endpoint with one request in flight has no room, so the second long
// request goes to the other server and the burst finds none). Long requests fill both servers; a
// burst of eight with TTFT objectives in a shuffled order queues in the router; as the servers
// free, the burst is dispatched one head at a time in deadline order (edf, one flow) and drained
// without loss: every request is a 200, each queued one's decision trace carries its wait, the
// detector's verdict and both flow control stage calls, and /metrics counts the eight
// dispatches. It runs twice: with flow control's stages built in, and with them as the plugin
// binaries of flow-control-plugins.yaml's detector and order slots.
func TestFlowControlBurstDrainsInDeadlineOrder(t *testing.T) {
	t.Run("built-in stages", func(t *testing.T) {
		cfg := exampleOnFleet(t, "flow-control.yaml")
		cfg.FlowControl.Detector.MaxInflight = 1
		cfg.FlowControl.Policy = "edf" // the example's slo-feasible would put deadlines passed during the long requests last
		burstDrainsInDeadlineOrder(t, cfg, "flowControl")
	})
	t.Run("plugin stages", func(t *testing.T) {
		cfg := exampleOnFleet(t, "flow-control-plugins.yaml")
		cfg.Plugin("saturation").Parameters["maxInflight"] = 1
		cfg.Plugin("order").Parameters["policy"] = "edf"
		burstDrainsInDeadlineOrder(t, cfg, "saturation", "order")
	})
}

// burstDrainsInDeadlineOrder runs the test on cfg; stagePlugins names the plugins whose calls
// the traces must show (the detector's, then the ordering policy's when it differs).
func burstDrainsInDeadlineOrder(t *testing.T, cfg *config.Config, stagePlugins ...string) {
	r := startConfig(t, cfg)
	url := "http://" + r.Addr()

	// The two long requests: their answers' headers come with the first token, so both are in
	// flight once post returns; 800 tokens (seconds of decoding) keep them there while the
	// burst queues.
	// The picker is weighted-random: should two land on one server, one more fills the other.
	var long []*http.Response
	busy := map[string]bool{}
	for i := 0; len(busy) < 2; i++ {
		if i == 6 {
			t.Fatalf("six long requests reached only %v", busy)
		}
		resp := post(t, context.Background(), url, chat(800), "x-request-id", fmt.Sprint("long-", i), "x-foresight-debug", "1")
		var tr struct{ Order []string }
		if err := json.Unmarshal([]byte(resp.Header.Get("x-foresight-decision")), &tr); resp.StatusCode != http.StatusOK || err != nil || len(tr.Order) == 0 {
			t.Fatalf("long request %d: %d, decision %q", i, resp.StatusCode, resp.Header.Get("x-foresight-decision"))
		}
		busy[tr.Order[0]] = true
		long = append(long, resp)
	}
	slos := []int{8000, 3000, 6000, 1000, 7000, 2000, 5000, 4000}
	type result struct {
		id     string
		status int
		trace  string
		body   string
	}
	results := make(chan result, len(slos))
	for i, slo := range slos {
		id := fmt.Sprint("slo-", slo)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(chat(4)))
			req.Header.Set("x-request-id", id)
			req.Header.Set("x-llm-d-slo-ttft-ms", fmt.Sprint(slo))
			req.Header.Set("x-foresight-debug", "1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- result{id: id, body: err.Error()}
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			results <- result{id, resp.StatusCode, resp.Header.Get("x-foresight-decision"), string(body)}
		}()
		eventually.Wait(t, 10*time.Second, fmt.Sprintf("%d requests queued", i+1), func() bool {
			_, body := adminCall(t, r, "GET", "/metrics", "") // the band's gauge appears with its first request
			return strings.Contains(body, fmt.Sprintf("\nforesight_flow_queue_requests{band=\"0\"} %d\n", i+1))
		})
	}
	for _, resp := range long { // the servers free one after the other; the queue drains
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	type dispatch struct {
		id  string
		now time.Time
	}
	var order []dispatch
	for range slos {
		res := <-results
		if res.status != http.StatusOK || !strings.Contains(res.body, "[DONE]") {
			t.Errorf("%s: %d %s", res.id, res.status, res.body)
			continue
		}
		var tr struct {
			Now         time.Time `json:"now"`
			FlowWaitMs  float64   `json:"flow_wait_ms"`
			FlowVerdict string    `json:"flow_verdict"`
			Stages      []struct {
				Stage, Plugin, Fallback string
			}
		}
		if err := json.Unmarshal([]byte(res.trace), &tr); err != nil || tr.FlowWaitMs <= 0 || !strings.HasPrefix(tr.FlowVerdict, "room on") {
			t.Errorf("%s: decision trace %s (%v); want its queue wait and a verdict with room", res.id, res.trace, err)
		}
		calls := map[string]string{} // flow control's stage → the plugin that answered
		for _, st := range tr.Stages {
			if (st.Stage == "detector" || st.Stage == "order") && st.Fallback == "" {
				calls[st.Stage] = st.Plugin
			}
		}
		if calls["detector"] != stagePlugins[0] || calls["order"] != stagePlugins[len(stagePlugins)-1] {
			t.Errorf("%s: flow control's stage calls %v, want the detector by %s and the order by %s", res.id, calls, stagePlugins[0], stagePlugins[len(stagePlugins)-1])
		}
		order = append(order, dispatch{res.id, tr.Now})
	}
	// The decision that dispatched each request ran when it reached the head: sorted by that
	// time, the requests come in deadline order.
	slices.SortFunc(order, func(a, b dispatch) int { return a.now.Compare(b.now) })
	var got []string
	for _, d := range order {
		got = append(got, d.id)
	}
	want := []string{"slo-1000", "slo-2000", "slo-3000", "slo-4000", "slo-5000", "slo-6000", "slo-7000", "slo-8000"}
	if !slices.Equal(got, want) {
		t.Errorf("dispatch order %v, want %v", got, want)
	}
	if n := metric(t, r, `foresight_flow_dispatched_total{band="0"}`); n != 8 {
		t.Errorf("foresight_flow_dispatched_total{band=\"0\"} %v, want 8", n)
	}
	// Flow control's stage calls are in the stage metrics: the ordering policy once per queued
	// request, the detector at least once per decision.
	detectorPlugin, orderPlugin := stagePlugins[0], stagePlugins[len(stagePlugins)-1]
	if n := metric(t, r, fmt.Sprintf(`foresight_stage_duration_seconds_count{plugin=%q,profile="default",stage="order"}`, orderPlugin)); n != 8 {
		t.Errorf("order stage calls %v, want 8", n)
	}
	if n := metric(t, r, fmt.Sprintf(`foresight_stage_duration_seconds_count{plugin=%q,profile="default",stage="detector"}`, detectorPlugin)); n < 8 {
		t.Errorf("detector stage calls %v, want at least 8", n)
	}
	// The access record follows the answer's last byte by a moment.
	eventually.Wait(t, 10*time.Second, "every request counted 200 (nothing lost)", func() bool {
		return metric(t, r, `foresight_requests_total{code="200"}`) == float64(len(long)+len(slos))
	})
	if n := metric(t, r, `foresight_flow_queue_requests{band="0"}`); n != 0 {
		t.Errorf("foresight_flow_queue_requests{band=\"0\"} %v, want the queue empty", n)
	}
}
