package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/freeport"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/engine"
)

// kvServer is an emulated server publishing its KV-cache events on ports of its own, which a
// restart keeps: the address and the event ports stay, the engine and its cache are new.
type kvServer struct {
	t      *testing.T
	addr   string
	kvPort int
	srv    *emulator.Server
	hs     *http.Server
}

// startKVServer starts an emulated server with a 64-block cache (1,024 tokens) on addr, publishing
// its events on kvPort and replaying them on kvPort+1.
func startKVServer(t *testing.T, addr string, kvPort int) *kvServer {
	t.Helper()
	cfgs, err := engine.Fleet("llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := emulator.NewServer(cfgs[0], "", emulator.WithKVCacheBlocks(64), emulator.WithKVEvents(kvPort))
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	eventually.Wait(t, 5*time.Second, "listening on "+addr, func() bool { // a restart waits for the old socket to go
		ln, err = net.Listen("tcp", addr)
		return err == nil
	})
	s := &kvServer{t: t, addr: addr, kvPort: kvPort, srv: srv, hs: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.hs.Serve(ln) }()
	t.Cleanup(s.stop)
	return s
}

func (s *kvServer) stop() {
	_ = s.hs.Close()
	s.srv.Close()
}

// restart stops the server and starts a new one on the same ports, as a pod's engine restarts.
func (s *kvServer) restart() *kvServer {
	s.stop()
	http.DefaultClient.CloseIdleConnections() // the old server's, which a POST would not retry
	return startKVServer(s.t, s.addr, s.kvPort)
}

// sharedPrompt is a chat whose system prompt is 40 of the emulator's 16-token blocks long, to
// which each request adds a question of its own.
func sharedPrompt(system, question string) string {
	body, _ := json.Marshal(map[string]any{"model": emulator.DefaultModel, "max_tokens": 2, "messages": []map[string]string{
		{"role": "system", "content": strings.Repeat(system+" ", 160)}, {"role": "user", "content": question}}})
	return string(body)
}

// complete sends body to url's chat API and reads the whole answer.
func complete(t *testing.T, url, body string) {
	t.Helper()
	resp := post(t, context.Background(), url, body)
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}

// lastDecision returns the router's last decision trace: each candidate's prefix match, and the
// candidates whose match came from their KV-cache events.
func lastDecision(t *testing.T, admin string) (match map[string]float64, fromEvents []string) {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/debug/decisions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ds []struct {
		Candidates []struct {
			ID    string `json:"id"`
			State struct {
				PrefixMatch float64 `json:"prefix_match"`
			} `json:"state"`
		} `json:"candidates"`
		FromEvents []string `json:"prefix_from_events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ds); err != nil || len(ds) == 0 {
		t.Fatalf("decisions: %v (%d)", err, len(ds))
	}
	d := ds[len(ds)-1]
	match = map[string]float64{}
	for _, c := range d.Candidates {
		match[c.ID] = c.State.PrefixMatch
	}
	return match, d.FromEvents
}

// TestServeKVEvents runs `foresight serve` over two emulated servers that publish their KV-cache
// events, routing by prefix match alone. A prompt sent through the router is then matched on its
// server from the server's own events; once the server has evicted it (other prompts sent to it
// directly, past the router, fill its small cache), it matches there no more, though the
// router's own record of what it sent still says it does; and when the server's engine restarts,
// its record of events is dropped. Once with the emulator's tokenizer in the router, once with
// the engines' POST /tokenize (kvEvents.tokenizer vllm).
func TestServeKVEvents(t *testing.T) {
	for _, tokenizer := range []string{"emulator", "vllm"} {
		t.Run(tokenizer, func(t *testing.T) { testServeKVEvents(t, tokenizer) })
	}
}

func testServeKVEvents(t *testing.T, tokenizer string) {
	addrs := []string{freeport.Addr(t), freeport.Addr(t)}
	ports, err := freeport.Ports(4)
	if err != nil {
		t.Fatal(err)
	}
	// Two pairs of consecutive ports: publisher and replay.
	kvPorts := []int{}
	for _, p := range ports {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1)); err == nil {
			l.Close()
			kvPorts = append(kvPorts, p)
		}
	}
	if len(kvPorts) < 2 {
		t.Skip("no two free pairs of ports")
	}
	servers := []*kvServer{startKVServer(t, addrs[0], kvPorts[0]), startKVServer(t, addrs[1], kvPorts[1])}
	r := startServe(t, writeConfig(t, "kv-events.yaml", fmt.Sprintf(`plugins:
  - {name: prefix, type: prefix-cache-scorer}
  - {name: max-score, type: max-score-picker}
pipeline:
  scorers: [{pluginRef: prefix}]
  picker: {pluginRef: max-score}
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
kvEvents: {tokenizer: %s}
endpoints:
  static:
    - {id: a, address: %s, kvEvents: "tcp://127.0.0.1:%d", kvEventsReplay: "tcp://127.0.0.1:%d"}
    - {id: b, address: %s, kvEvents: "tcp://127.0.0.1:%d"}
`, tokenizer, addrs[0], kvPorts[0], kvPorts[0]+1, addrs[1], kvPorts[1])), "--ext-proc", "127.0.0.1:0")
	waitMetric(t, r.admin, `(?m)^foresight_kv_events_connected\{endpoint="a"\} 1$`)
	waitMetric(t, r.admin, `(?m)^foresight_kv_events_connected\{endpoint="b"\} 1$`)

	// The first prompt goes to either; its server's events make it the one that matches.
	prompt := sharedPrompt("weather", "first")
	complete(t, "http://"+r.api, prompt)
	var at string
	eventually.Wait(t, 10*time.Second, "the prompt's blocks stored on one server", func() bool {
		complete(t, "http://"+r.api, sharedPrompt("weather", "again"))
		match, fromEvents := lastDecision(t, r.admin)
		for id, m := range match {
			if m > 0.9 && slices.Contains(fromEvents, id) {
				at = id
				return true
			}
		}
		return false
	})
	i := map[string]int{"a": 0, "b": 1}[at]
	t.Logf("the prompt is cached on %s", at)

	// Other prompts sent straight to that server evict it there: the router's events say so.
	for k := range 4 {
		complete(t, "http://"+servers[i].addr, sharedPrompt(fmt.Sprintf("filler%d", k), "evict"))
	}
	waitMetric(t, r.admin, fmt.Sprintf(`(?m)^foresight_kv_events_blocks_total\{endpoint=%q,event="removed"\} [1-9]`, at))
	complete(t, "http://"+r.api, sharedPrompt("weather", "after eviction"))
	match, fromEvents := lastDecision(t, r.admin)
	if !slices.Contains(fromEvents, at) || match[at] > 0.1 {
		t.Fatalf("after the eviction: match %v (from events: %v), want %s's below 0.1, from its events", match, fromEvents, at)
	}

	// Cached again, then the engine restarts: its events begin again, and the record is dropped.
	complete(t, "http://"+servers[i].addr, sharedPrompt("weather", "cache it again"))
	eventually.Wait(t, 10*time.Second, "the prompt matched again on "+at, func() bool {
		complete(t, "http://"+r.api, sharedPrompt("weather", "probe"))
		match, _ := lastDecision(t, r.admin)
		return match[at] > 0.9
	})
	servers[i] = servers[i].restart()
	// The subscriber reconnects (its backoff reaches 2 s); a batch the new engine published
	// before, it would not see.
	waitMetric(t, r.admin, fmt.Sprintf(`(?m)^foresight_kv_events_connects_total\{endpoint=%q\} 2$`, at))
	complete(t, "http://"+servers[i].addr, sharedPrompt("unrelated", "first step of the new engine"))
	waitMetric(t, r.admin, fmt.Sprintf(`(?m)^foresight_kv_events_restarts_total\{endpoint=%q\} 1$`, at))
	eventually.Wait(t, 10*time.Second, "the prompt not matched on the restarted "+at, func() bool {
		complete(t, "http://"+r.api, sharedPrompt("weather", "after restart"))
		match, fromEvents := lastDecision(t, r.admin)
		return slices.Contains(fromEvents, at) && match[at] < 0.1
	})
	waitMetric(t, r.admin, `(?m)^foresight_kv_events_tokenized_total\{result="ok"\} [1-9]`)
	waitMetric(t, r.admin, `(?m)^foresight_kv_events_tokenized_total\{result="failed"\} 0$`)
}
