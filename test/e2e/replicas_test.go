package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/emulator"
)

// TestReplicasShareTheirRequestsInFlight: two `foresight serve` replicas behind no gateway, one
// running the embedded NATS server and the other connecting to it, each sending a request to
// the endpoint with the fewest requests in flight. Twelve long requests come alternately to one
// and the other: with the state plane each replica counts the other's requests, so the four
// servers stay within one request of each other after every dispatch, as behind one router.
// Without it each replica balances only its own, and the servers drift apart: the check after
// every request fails on all but a few orders in a thousand (see docs/kubernetes.md "Replicas").
func TestReplicasShareTheirRequestsInFlight(t *testing.T) {
	fleet, err := emulator.Start(4, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	natsAddr := freeAddr(t)
	config := func(name, state string) string {
		var static strings.Builder
		for i, a := range fleet.Addrs() {
			fmt.Fprintf(&static, "    - {id: s%d, address: %s}\n", i, a)
		}
		return writeConfig(t, name, fmt.Sprintf(`plugins:
  - {name: least-inflight, type: queue-scorer, parameters: {source: inflight}}
  - {name: max-score, type: max-score-picker}
pipeline:
  scorers: [{pluginRef: least-inflight}]
  picker: {pluginRef: max-score}
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
scrape: {interval: 1h}
state: %s
endpoints:
  static:
%s`, state, static.String()))
	}
	a := startServe(t, config("replica-a.yaml", fmt.Sprintf("{replica: a, nats: {embedded: {listen: %q}}}", natsAddr)), "--ext-proc", "127.0.0.1:0")
	b := startServe(t, config("replica-b.yaml", fmt.Sprintf("{replica: b, nats: {url: %q}}", "nats://"+natsAddr)), "--ext-proc", "127.0.0.1:0")
	waitPeers(t, a.admin, 1)
	waitPeers(t, b.admin, 1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inflight := func() []int {
		var n []int
		for _, s := range fleet.Servers() {
			m := s.Metrics()
			n = append(n, m.Running+m.Waiting+m.Pending)
		}
		return n
	}
	for i := range 12 {
		url := "http://" + []string{a.api, b.api}[i%2]
		resp := post(t, ctx, url, chat(4000))
		go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
		deadline := time.Now().Add(5 * time.Second)
		for total(inflight()) < i+1 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // the dispatch reaches the other replica (a few ms on loopback)
		n := inflight()
		if slices.Max(n)-slices.Min(n) > 1 {
			t.Fatalf("after request %d (to replica %s): servers hold %v, more than one apart", i+1, []string{"a", "b"}[i%2], n)
		}
	}
	if n := inflight(); total(n) != 12 {
		t.Errorf("servers hold %v, want 12 in flight", n)
	}
}

func total(n []int) int {
	s := 0
	for _, v := range n {
		s += v
	}
	return s
}

// freeAddr returns a loopback address free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitPeers waits until the replica whose admin listener is at admin has heard from n peers.
func waitPeers(t *testing.T, admin string, n int) {
	t.Helper()
	want := regexp.MustCompile(fmt.Sprintf(`(?m)^foresight_state_peers %d$`, n))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if resp, err := http.Get("http://" + admin + "/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want.Match(body) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica at %s: not %d peers within 10 s", admin, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
