package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/sim/emulator"
)

// pdFixture is a router over emulated servers with the roles given (role "" is unlabelled), plus
// dead prefill endpoints, serving disaggregation with split mode split. It scrapes every
// interval: a minute keeps a dead endpoint in the rotation.
func pdFixture(t *testing.T, interval time.Duration, split string, roles []string, deadPrefills int) (*fixture, []*emulator.Server) {
	t.Helper()
	fleet, err := emulator.Start(len(roles), 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	var eps []endpoints.Endpoint
	for i := range deadPrefills {
		eps = append(eps, endpoints.Endpoint{ID: "dead-" + string(rune('a'+i)), Address: deadAddress(t),
			Labels: map[string]string{endpoints.DefaultRoleLabel: "prefill"}})
	}
	for i, a := range fleet.Addrs() {
		e := endpoints.Endpoint{ID: "vllm-" + string(rune('0'+i)), Address: a}
		if roles[i] != "" {
			e.Labels = map[string]string{endpoints.DefaultRoleLabel: roles[i]}
		}
		eps = append(eps, e)
	}
	f := newFixtureFor(t, interval, eps)
	f.fleet = fleet
	cfg, err := config.Parse("pd.yaml", []byte(builtinPipeline+"disaggregation: {split: "+split+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.srv.SetDisaggregation(cfg.Disaggregation)
	return f, fleet.Servers()
}

// pdTrace is what the tests read of a disaggregated request's decision.
type pdTrace struct {
	Hop         string   `json:"hop"`
	Order       []string `json:"order"`
	Split       string   `json:"split"`
	SplitReason string   `json:"split_reason"`
	Prefill     *struct {
		Hop   string   `json:"hop"`
		Order []string `json:"order"`
	} `json:"prefill"`
}

func decision(t *testing.T, h http.Header) pdTrace {
	t.Helper()
	var tr pdTrace
	if err := json.Unmarshal([]byte(h.Get(HeaderDecision)), &tr); err != nil {
		t.Fatalf("decision header %q: %v", h.Get(HeaderDecision), err)
	}
	return tr
}

func TestTwoHopsThroughThePrefillAndTheDecodeServer(t *testing.T) {
	f, srvs := pdFixture(t, 10*time.Millisecond, config.SplitAlways, []string{"prefill", "decode", "prefill"}, 0)
	for i, stream := range []bool{true, false} {
		code, h, out := f.post(t, "/v1/chat/completions", chatBody(stream, ""), HeaderDebug, "1")
		if code != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i, code, out)
		}
		if stream && !strings.Contains(out, "data: [DONE]") || !stream && !strings.Contains(out, `"choices"`) {
			t.Errorf("request %d: not a whole answer: %s", i, out)
		}
		if strings.Contains(out, "kv_transfer_params") {
			t.Errorf("request %d: the client sees the KV transfer: %s", i, out)
		}
		tr := decision(t, h)
		if tr.Hop != "decode" || tr.Split != "two-hops" || tr.Order[0] != "vllm-1" || tr.Prefill == nil || tr.Prefill.Hop != "prefill" {
			t.Fatalf("request %d: trace %+v, want a decode decision on vllm-1 with its prefill decision", i, tr)
		}
		if p := tr.Prefill.Order[0]; p != "vllm-0" && p != "vllm-2" || len(tr.Prefill.Order) != 2 {
			t.Errorf("request %d: prefill order %v, want the two prefill servers", i, tr.Prefill.Order)
		}
	}
	// The decode server pulled twice, each time from the prefill server that answered the hop.
	dec := srvs[1].PD()
	pre := srvs[0].PD().Prefills + srvs[2].PD().Prefills
	if dec.Decodes != 2 || dec.Prefills != 0 || pre != 2 {
		t.Fatalf("decode server %+v, prefills %d; want 2 decode hops after 2 prefill hops", dec, pre)
	}
	for engine, n := range dec.RemoteEngines {
		from := srvs[0]
		if engine == emulator.EngineID(f.fleet.Addrs()[2]) {
			from = srvs[2]
		} else if engine != emulator.EngineID(f.fleet.Addrs()[0]) {
			t.Errorf("the decode server pulled from %q, no prefill server's engine", engine)
		}
		if from.PD().Prefills != n {
			t.Errorf("%d pulls from %s, which served %d prefills", n, engine, from.PD().Prefills)
		}
	}
	logs := f.log.String()
	for _, want := range []string{`"split":"two-hops"`, `"prefill_endpoint":"vllm-`, `"prefill_ms":`, `"endpoint":"vllm-1"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("access log lacks %s:\n%s", want, logs)
		}
	}
	// Every flight ended: the prefill hops' and the decode hops'.
	f.wantMetrics(t, `foresight_endpoint_inflight_requests{endpoint="vllm-0"} 0`, `foresight_endpoint_inflight_requests{endpoint="vllm-1"} 0`,
		`foresight_endpoint_inflight_requests{endpoint="vllm-2"} 0`)
}

func TestEveryPrefillServerDownServesTheRequestWhole(t *testing.T) {
	// Scrapes every minute: the dead prefill endpoints stay in the rotation, so the prefill hops
	// are tried and fail.
	f, srvs := pdFixture(t, time.Minute, config.SplitAlways, []string{"decode"}, 2)
	code, h, out := f.post(t, "/v1/chat/completions", chatBody(true, ""), HeaderDebug, "1")
	if code != http.StatusOK || !strings.Contains(out, "data: [DONE]") {
		t.Fatalf("status %d: %s", code, out)
	}
	tr := decision(t, h)
	if tr.Split != "whole" || !strings.Contains(tr.SplitReason, "every prefill attempt failed (2)") {
		t.Errorf("trace split %q (%s), want whole after two failed prefill attempts", tr.Split, tr.SplitReason)
	}
	if pd := srvs[0].PD(); pd.Decodes != 0 || pd.Prefills != 0 {
		t.Errorf("the decode server saw a disaggregated request: %+v", pd)
	}
	if logs := f.log.String(); !strings.Contains(logs, `"prefill_failures":["prefill on dead-`) || !strings.Contains(logs, `"split":"whole"`) {
		t.Errorf("the access log does not say the prefill hops failed:\n%s", logs)
	}
	f.wantMetrics(t, `foresight_endpoint_inflight_requests{endpoint="vllm-0"} 0`, `foresight_endpoint_inflight_requests{endpoint="dead-a"} 0`,
		`foresight_endpoint_inflight_requests{endpoint="dead-b"} 0`)
}

func TestAFleetWithoutPrefillServersServesWhole(t *testing.T) {
	// No endpoint prefills: no prefill decision is taken, and nothing goes to the prefill-less
	// fleet as a hop. split: never sends everything whole without asking.
	for _, split := range []string{config.SplitAdaptive, config.SplitNever} {
		f, srvs := pdFixture(t, 10*time.Millisecond, split, []string{"decode", ""}, 0)
		for range 2 {
			code, h, out := f.post(t, "/v1/completions", `{"model":"`+emulator.DefaultModel+`","prompt":"Name a river.","max_tokens":5}`, HeaderDebug, "1")
			if code != http.StatusOK {
				t.Fatalf("%s: status %d: %s", split, code, out)
			}
			tr := decision(t, h)
			switch split {
			case config.SplitNever:
				if tr.Hop != "" || tr.Split != "" || tr.Prefill != nil {
					t.Errorf("never: trace %+v, want a whole request's", tr)
				}
			default: // adaptive: no prefill decision to take, the decode endpoint would be its one candidate
				if tr.Hop != "decode" || tr.Split != "whole" || tr.Prefill != nil || !strings.Contains(tr.SplitReason, "no endpoint that prefills is in the rotation") {
					t.Errorf("adaptive: trace %+v, want it whole without a prefill decision", tr)
				}
			}
		}
		for i, s := range srvs {
			if pd := s.PD(); pd.Decodes != 0 || pd.Prefills != 0 {
				t.Errorf("%s: server %d saw a disaggregated request: %+v", split, i, pd)
			}
		}
	}
}

func TestPrefillOnlyServersNeverServeWholeRequests(t *testing.T) {
	f, srvs := pdFixture(t, 10*time.Millisecond, config.SplitAlways, []string{"prefill", "decode"}, 0)
	// Embeddings cannot be split: they go whole, and only to the decode server.
	for range 3 {
		if code, _, out := f.post(t, "/v1/embeddings", `{"model":"`+emulator.DefaultModel+`","input":"a river"}`); code != http.StatusOK {
			t.Fatalf("status %d: %s", code, out)
		}
	}
	if !strings.Contains(f.log.String(), `"endpoint":"vllm-1"`) || strings.Contains(f.log.String(), `"endpoint":"vllm-0"`) {
		t.Errorf("embeddings went to the prefill server:\n%s", f.log.String())
	}
	if pd := srvs[0].PD(); pd.Prefills != 0 {
		t.Errorf("the prefill server saw %d prefill hops for embeddings", pd.Prefills)
	}
}

func TestARoleLabelNamingNoRoleServesNeitherHopAndIsLogged(t *testing.T) {
	f, srvs := pdFixture(t, 10*time.Millisecond, config.SplitAlways, []string{"prefil", "decode"}, 0)
	for range 2 {
		if code, _, out := f.post(t, "/v1/chat/completions", chatBody(true, "")); code != http.StatusOK {
			t.Fatalf("status %d: %s", code, out)
		}
	}
	if pd := srvs[0].PD(); pd.Prefills != 0 {
		t.Errorf("the mislabelled server took %d prefill hops", pd.Prefills)
	}
	logs := f.log.String()
	if strings.Count(logs, "serves neither prefill nor decode hops") != 1 || !strings.Contains(logs, `names no role`) {
		t.Errorf("want one warning naming the label:\n%s", logs)
	}
}

func TestThePrefillDecisionSeesTheDecodeEndpointsMatchBeforeItsDecodeHop(t *testing.T) {
	// The decode hop's dispatch records the prompt in the decode endpoint's prefix index; the
	// prefill decision must judge that endpoint serving the request whole as it was before, not
	// as if it held the whole prompt already.
	f, _ := pdFixture(t, 10*time.Millisecond, config.SplitAdaptive, []string{"prefill", "decode"}, 0)
	code, h, out := f.post(t, "/v1/completions", `{"model":"`+emulator.DefaultModel+`","prompt":"`+strings.Repeat("A fresh prompt no server has seen. ", 40)+`","max_tokens":4}`, HeaderDebug, "1")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, out)
	}
	var tr struct {
		Prefill struct {
			Candidates []struct {
				ID    string `json:"id"`
				State struct {
					PrefixMatch float64 `json:"prefix_match"`
				} `json:"state"`
			} `json:"candidates"`
		} `json:"prefill"`
	}
	if err := json.Unmarshal([]byte(h.Get(HeaderDecision)), &tr); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range tr.Prefill.Candidates {
		if c.ID == "vllm-1" {
			found = true
			if c.State.PrefixMatch != 0 {
				t.Errorf("the decode endpoint's prefix match in the prefill decision is %v, want 0 for a fresh prompt", c.State.PrefixMatch)
			}
		}
	}
	if !found {
		t.Fatalf("the decode endpoint is not a candidate of the prefill decision: %s", h.Get(HeaderDecision))
	}
}
