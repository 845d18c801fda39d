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

	"github.com/foresight-router/foresight/bench"
	"github.com/foresight-router/foresight/sim/emulator"
)

// TestServeDisaggregated: `foresight serve` over two emulated prefill servers and one decode
// server, with the real producer. As an OpenAI proxy it sends each request as a prefill hop and a
// decode hop that carries the prefill's kv_transfer_params; as a gateway's endpoint picker it
// names the decode server as the destination and the prefill server in llm-d's sidecar header
// (removed from a request it serves whole); with every prefill server down it serves requests
// whole on the decode server and loses none.
func TestServeDisaggregated(t *testing.T) {
	prefills, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prefills.Close)
	decodes, err := emulator.Start(1, 0, "llama-3.1-8b-h100-tp2", 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(decodes.Close)
	pa, da := prefills.Addrs(), decodes.Addrs()[0]
	yaml := fmt.Sprintf(`plugins:
  - name: predictor
    type: predicted-latency-producer
    path: ../bin/plugins/producer
    version: ">=4.0.0, <5.0.0"
  - {name: rr, type: round-robin-picker}
pipeline:
  producer: {pluginRef: predictor}
  picker: {pluginRef: rr}
  stageTimeout: 5s
disaggregation: {split: always}
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0", maxAttempts: 3}
scrape: {interval: 1h}
endpoints:
  static:
    - {id: p0, address: %s, labels: {llm-d.ai/role: prefill}}
    - {id: p1, address: %s, labels: {llm-d.ai/role: prefill}}
    - {id: d0, address: %s, labels: {llm-d.ai/role: decode}}
`, pa[0], pa[1], da)
	p := startServe(t, writeConfig(t, "pd.yaml", yaml), "--ext-proc", "127.0.0.1:0")
	url := "http://" + p.api
	dec := decodes.Servers()[0]

	split := func(resp *http.Response) (string, string) {
		t.Helper()
		var tr struct {
			Split       string `json:"split"`
			SplitReason string `json:"split_reason"`
		}
		if err := json.Unmarshal([]byte(resp.Header.Get("x-foresight-decision")), &tr); err != nil {
			t.Fatalf("decoding the decision: %v", err)
		}
		return tr.Split, tr.SplitReason
	}
	serve := func(n int) []string {
		t.Helper()
		var splits []string
		for range n {
			resp := post(t, context.Background(), url, chat(8), "x-foresight-debug", "1")
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "data: [DONE]") {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			s, why := split(resp)
			splits = append(splits, s+" "+why)
		}
		return splits
	}

	// The proxy's two hops: every request is prefilled on p0 or p1 and decoded on d0, which pulls
	// from the prefill server named in the kv_transfer_params it was given.
	if got := serve(4); slices.ContainsFunc(got, func(s string) bool { return s != "two-hops " }) {
		t.Errorf("splits %q, want two hops each", got)
	}
	pd := dec.PD()
	pre := prefills.Servers()[0].PD().Prefills + prefills.Servers()[1].PD().Prefills
	if pd.Decodes != 4 || pre != 4 {
		t.Fatalf("decode server %+v after %d prefill hops; want 4 decode hops after 4", pd, pre)
	}
	for i, a := range pa {
		if n := pd.RemoteEngines[emulator.EngineID(a)]; n != prefills.Servers()[i].PD().Prefills {
			t.Errorf("d0 pulled %d times from p%d, which served %d prefill hops", n, i, prefills.Servers()[i].PD().Prefills)
		}
	}

	// The endpoint picker: the decode server is the destination, a prefill server is in llm-d's
	// header; an embeddings request, which cannot be split, goes whole and has the header removed.
	_, gw := dialPicker(t, p.extProc)
	tr := gw.do(chatPath, extChat(true, 4), nil, "x-prefiller-host-port", "10.0.0.1:1")
	if tr.destination != da || !slices.Contains(pa, tr.prefiller) {
		t.Errorf("ext_proc pick: destination %q, x-prefiller-host-port %q; want %s and one of %v", tr.destination, tr.prefiller, da, pa)
	}
	tr = gw.do("/v1/embeddings", fmt.Sprintf(`{"model":%q,"input":"a river"}`, emulator.DefaultModel), nil, "x-prefiller-host-port", "10.0.0.1:1")
	if tr.destination != da || tr.prefiller != "" || !slices.Contains(tr.removed, "x-prefiller-host-port") {
		t.Errorf("ext_proc embeddings: destination %q, prefiller %q, removed %v; want %s, none, the header removed", tr.destination, tr.prefiller, tr.removed, da)
	}

	// Every prefill server down: the requests are served whole on d0, none lost. The scrapes
	// are hourly, so the dead servers stay in the rotation and their prefill hops are tried.
	prefills.Close()
	before := dec.PD().Decodes
	for _, s := range serve(3) {
		// Whole after the failed prefill attempts, or once outlier detection ejected both, for
		// want of a prefill server in the rotation.
		if !strings.HasPrefix(s, "whole every prefill attempt failed") && !strings.HasPrefix(s, "whole the prefill decision has no pick") {
			t.Errorf("with the prefill servers down: split %q, want whole", s)
		}
	}
	if dec.PD().Decodes != before {
		t.Errorf("d0 served %d decode hops with no prefill server up", dec.PD().Decodes-before)
	}
}

// TestBenchLiveDisaggregatedKill: bench live through `foresight serve` on a prefill/decode fleet,
// one of its two prefill servers stopped a second into the run: no request is lost, the router
// sending its prefill hops to the other prefill server, or the request whole to its decode server.
func TestBenchLiveDisaggregatedKill(t *testing.T) {
	trace := writeAzureTrace(t, 80) // twice as fast: 80 arrivals over 2 s
	stdout, stderr, code := foresight(t, "bench", "live", "--configs", "examples/least-load.yaml", "--baselines", "none",
		"--scenario", "azure-conv", "--trace", trace, "--prefill", "2", "--decode", "2", "--split", "always",
		"--kill-prefill", "1s", "--speedup", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res bench.LiveResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(res.Runs) != 1 || res.Disaggregation != "2 prefill + 2 decode, split always" {
		t.Fatalf("%d runs on %q:\n%s", len(res.Runs), res.Disaggregation, stderr)
	}
	run := res.Runs[0]
	if run.Unavailable != "" || run.Killed == "" {
		t.Fatalf("run %+v: unavailable %q, killed %q", run.Name, run.Unavailable, run.Killed)
	}
	if run.Sent != 80 || run.OK != 80 {
		t.Errorf("%d ok of %d sent (%d shed, %d errors, %d cut) with a prefill server stopped; want all 80", run.OK, run.Sent, run.Shed, run.Errors, run.Cut)
	}
}
