package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/engine"
)

// TestServeBlocksTheZoneOfAnUnhealthyEndpoint: a live router whose failover and schedulability
// filters are the real plugin processes. Endpoint b stops answering, so it leaves the rotation and
// every cycle carries it in excluded; the failover filter then blocks a, b's zone-mate, and the
// schedulability filter c, labelled unschedulable, so every request goes to d.
func TestServeBlocksTheZoneOfAnUnhealthyEndpoint(t *testing.T) {
	fleet, err := emulator.Start(3, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there: b's scrapes fail
	addrs := fleet.Addrs()
	yaml := fmt.Sprintf(`plugins:
  - name: failover
    type: failover-filter
    path: ../bin/plugins/failover
  - name: schedulability
    type: schedulability-filter
    path: ../bin/plugins/schedulability
  - name: rr
    type: round-robin-picker
pipeline:
  filters: [{pluginRef: failover}, {pluginRef: schedulability}]
  picker: {pluginRef: rr}
  stageTimeout: 5s
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
endpoints:
  static:
    - {id: a, address: %s, labels: {topology.kubernetes.io/zone: z1}}
    - {id: b, address: %s, labels: {topology.kubernetes.io/zone: z1}}
    - {id: c, address: %s, labels: {topology.kubernetes.io/zone: z2, foresight.io/schedulable: "false"}}
    - {id: d, address: %s, labels: {topology.kubernetes.io/zone: z2}}
`, addrs[0], dead, addrs[1], addrs[2])
	r := startFile(t, writeConfig(t, "failover.yaml", yaml))
	url := "http://" + r.Addr()

	type stage struct {
		Stage, Plugin, Reason string
		Kept                  []string
	}
	var trace struct {
		Order  []string `json:"order"`
		Stages []stage  `json:"stages"`
	}
	eventually.Wait(t, 10*time.Second, "a cycle without b, whose scrapes fail", func() bool {
		resp := post(t, context.Background(), url, chat(2), "x-foresight-debug", "1")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if err := json.Unmarshal([]byte(resp.Header.Get("x-foresight-decision")), &trace); err != nil {
			t.Fatalf("decoding the decision: %v", err)
		}
		return len(trace.Stages) > 0 && !slices.Contains(trace.Stages[0].Kept, "b") && strings.Contains(trace.Stages[0].Reason, "z1")
	})
	want := []stage{
		{Stage: "filter", Plugin: "failover", Reason: "2 of 3 outside the failing domains (topology.kubernetes.io/zone z1)", Kept: []string{"c", "d"}},
		{Stage: "filter", Plugin: "schedulability", Reason: `1 of 2 schedulable (1 with foresight.io/schedulable in ["false"])`, Kept: []string{"d"}},
	}
	if !slices.EqualFunc(trace.Stages[:2], want, func(a, b stage) bool {
		return a.Stage == b.Stage && a.Plugin == b.Plugin && a.Reason == b.Reason && slices.Equal(a.Kept, b.Kept)
	}) || !slices.Equal(trace.Order, []string{"d"}) {
		t.Errorf("stages %+v, order %v; want %+v and d alone", trace.Stages, trace.Order, want)
	}
}

// TestServeFailsOverBeyondTheFilters: the real schedulability filter keeps one endpoint, c, whose
// engine answers every completion 500 while its metrics answer. The request is not a 502 from
// the one endpoint tried: the proxy goes on to a, which the filter left out but which has room,
// and the kept decision says it left the pipeline's order, and why.
func TestServeFailsOverBeyondTheFilters(t *testing.T) {
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	cfgs, err := engine.Fleet("llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emulator.NewServer(cfgs[0], emulator.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "completions") {
			http.Error(w, `{"error":{"message":"CUDA error: an illegal memory access"}}`, http.StatusInternalServerError)
			return
		}
		emu.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(broken.Close)
	addrs := fleet.Addrs()
	yaml := fmt.Sprintf(`plugins:
  - name: schedulability
    type: schedulability-filter
    path: ../bin/plugins/schedulability
  - name: rr
    type: round-robin-picker
pipeline:
  filters: [{pluginRef: schedulability}]
  picker: {pluginRef: rr}
  stageTimeout: 5s
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0", maxAttempts: 3}
endpoints:
  static:
    - {id: a, address: %s, labels: {foresight.io/schedulable: "false"}}
    - {id: b, address: %s, labels: {foresight.io/schedulable: "false"}}
    - {id: c, address: %s}
`, addrs[0], addrs[1], broken.Listener.Addr().String())
	r := startFile(t, writeConfig(t, "beyond.yaml", yaml))
	resp := post(t, context.Background(), "http://"+r.Addr(), chat(2))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "data: [DONE]") {
		t.Fatalf("status %d, body %s; want a's whole answer", resp.StatusCode, body)
	}
	d := r.Server().Decisions()
	if len(d) != 1 || !slices.Equal(d[0].OrderIDs(), []string{"c"}) || !slices.Equal(d[0].BeyondOrder, []string{"a"}) ||
		!strings.Contains(d[0].BeyondReason, "the 1 endpoints of the pipeline's order failed before the first byte") {
		t.Fatalf("decisions %+v; want c alone in the order, a tried beyond it and why", d)
	}
}
