package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/bench"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/freeport"
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
	natsAddr := freeport.Addr(t)
	a := startReplica(t, fleet, fmt.Sprintf("{replica: a, nats: {embedded: {listen: %q}}}", natsAddr))
	b := startReplica(t, fleet, fmt.Sprintf("{replica: b, nats: {url: %q}}", "nats://"+natsAddr))
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
	replicas := []serveProcess{a, b}
	for i := range 12 {
		to, other := replicas[i%2], replicas[(i+1)%2]
		resp := post(t, ctx, "http://"+to.api, chat(4000))
		go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
		eventually.Wait(t, 5*time.Second, "the request at its server", func() bool { return total(inflight()) >= i+1 })
		// The dispatch reaches the other replica (a few ms on loopback): it counts every request
		// its peer sent.
		waitMetric(t, other.admin, fmt.Sprintf(`(?m)^foresight_state_peer_requests %d$`, (i+2)/2))
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

// startReplica starts `foresight serve` over fleet with the state section state, sending each
// request to the endpoint with the fewest requests in flight by its ledger.
func startReplica(t *testing.T, fleet *emulator.Fleet, state string) serveProcess {
	t.Helper()
	var static strings.Builder
	for i, a := range fleet.Addrs() {
		fmt.Fprintf(&static, "    - {id: s%d, address: %s}\n", i, a)
	}
	return startServe(t, writeConfig(t, fmt.Sprintf("replica-%d.yaml", replicaConfigs.Add(1)), fmt.Sprintf(`plugins:
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
%s`, state, static.String())), "--ext-proc", "127.0.0.1:0")
}

// replicaConfigs numbers the replicas' config files.
var replicaConfigs atomic.Int64

// waitPeers waits until the replica whose admin listener is at admin has heard from n peers.
func waitPeers(t *testing.T, admin string, n int) {
	t.Helper()
	waitMetric(t, admin, fmt.Sprintf(`(?m)^foresight_state_peers %d$`, n))
}

// waitMetric waits until the /metrics of the replica whose admin listener is at admin match
// pattern (10 s at most).
func waitMetric(t *testing.T, admin, pattern string) {
	t.Helper()
	want := regexp.MustCompile(pattern)
	eventually.Wait(t, 10*time.Second, "/metrics of "+admin+" matching "+pattern, func() bool {
		resp, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return want.Match(body)
	})
}

// TestReplicasThroughANATSPartition: two `foresight serve` replicas sharing an external NATS
// server (here one in the test process), under a steady load through both; the server stops for
// 10 s and comes back on the same address. No client request fails: each replica routes on its
// own view meanwhile, counts the partition, and hears its peer again once the server is back.
func TestReplicasThroughANATSPartition(t *testing.T) {
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	addr, dir := freeport.Addr(t), t.TempDir()
	srv, err := stateplane.Embed(stateplane.EmbedConfig{Listen: addr, StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown() }()
	var replicas []serveProcess
	for _, id := range []string{"a", "b"} {
		replicas = append(replicas, startReplica(t, fleet, fmt.Sprintf(`{replica: %s, nats: {url: "nats://%s"}}`, id, addr)))
	}
	for _, r := range replicas {
		waitPeers(t, r.admin, 1)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var served, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				url := "http://" + replicas[(w+i)%2].api
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/v1/chat/completions", strings.NewReader(chat(16)))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "data: [DONE]") {
					failed.Add(1)
					t.Logf("status %d: %.200s", resp.StatusCode, body)
					continue
				}
				served.Add(1)
			}
		})
	}
	time.Sleep(2 * time.Second)
	srv.Shutdown()
	for _, r := range replicas {
		waitMetric(t, r.admin, `(?m)^foresight_state_partitions_total 1$`)
		waitMetric(t, r.admin, `(?m)^foresight_state_peers 0$`)
	}
	time.Sleep(10 * time.Second)
	if srv, err = stateplane.Embed(stateplane.EmbedConfig{Listen: addr, StoreDir: dir}); err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		waitPeers(t, r.admin, 1)
	}
	time.Sleep(time.Second)
	cancel()
	wg.Wait()
	if failed.Load() != 0 || served.Load() < 40 {
		t.Errorf("%d requests served, %d failed; want every one served, and some", served.Load(), failed.Load())
	}
	t.Logf("%d requests served through the partition", served.Load())
}

// TestReplicasProducersLearnTogether: two `foresight serve` replicas with the real producer,
// sharing the embedded NATS of the first. Only replica a routes requests at first; the producers
// learn from each other through the router's state plane (FORESIGHT_NATS_URL, which serve hands
// its plugin processes; shareNATS "host" by default), so replica b's producer, given a few
// requests of its own at the end, reports a model trained on far more rows than b ever saw.
func TestReplicasProducersLearnTogether(t *testing.T) {
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	addr := freeport.Addr(t)
	config := func(state string) string {
		return writeConfig(t, fmt.Sprintf("replica-%d.yaml", replicaConfigs.Add(1)), fmt.Sprintf(`plugins:
  - name: predictor
    type: predicted-latency-producer
    path: ../bin/plugins/producer
    parameters: {sharePeriodMs: 200, youngMinNewSamples: 20, youngRetrainIntervalMs: 200}
  - {name: rr, type: round-robin-picker}
pipeline:
  producer: {pluginRef: predictor}
  picker: {pluginRef: rr}
  stageTimeout: 5s
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
state: %s
endpoints:
  static:
    - {id: s0, address: %s}
    - {id: s1, address: %s}
`, state, fleet.Addrs()[0], fleet.Addrs()[1]))
	}
	a := startServe(t, config(fmt.Sprintf("{replica: a, nats: {embedded: {listen: %q}}}", addr)), "--ext-proc", "127.0.0.1:0")
	b := startServe(t, config(fmt.Sprintf(`{replica: b, nats: {url: "nats://%s"}}`, addr)), "--ext-proc", "127.0.0.1:0")
	serve := func(p serveProcess, n int) {
		for range n {
			resp := post(t, context.Background(), "http://"+p.api, chat(8))
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	serve(a, 80)
	rows := regexp.MustCompile(`(?m)^foresight_predictor_training_rows (\d+)$`)
	trained := func(p serveProcess) int {
		resp, err := http.Get("http://" + p.admin + "/metrics")
		if err != nil {
			return 0
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := rows.FindSubmatch(body)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	eventually.Wait(t, 20*time.Second, "replica a's producer trained", func() bool { return trained(a) > 0 })
	served := 0
	eventually.Wait(t, 20*time.Second, "replica b's producer trained on a's samples", func() bool {
		serve(b, 1) // b's producer reports its model with the answer to b's samples
		served++
		time.Sleep(100 * time.Millisecond)
		return trained(b) > 2*served
	})
	t.Logf("replica b's model: %d training rows after %d requests of its own", trained(b), served)
}

// TestBenchLiveReplicas: bench live runs a config as two `foresight serve` replicas sharing a
// state plane, the client spreading the requests over them: every request served, the CPU of
// both routers counted, and both routers' access lines read.
func TestBenchLiveReplicas(t *testing.T) {
	trace := writeAzureTrace(t, 60)
	stdout, stderr, code := foresight(t, "bench", "live", "--configs", "examples/least-load.yaml", "--baselines", "none",
		"--scenario", "azure-conv", "--trace", trace, "--replicas", "2", "--speedup", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res bench.LiveResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(res.Runs) != 1 || !strings.Contains(res.Replicas, "2 replicas sharing a state plane") {
		t.Fatalf("%d runs, replicas %q:\n%s", len(res.Runs), res.Replicas, stderr)
	}
	run := res.Runs[0]
	if run.Unavailable != "" || run.Sent != 60 || run.OK != 60 {
		t.Fatalf("run %s: unavailable %q, %d ok of %d sent", run.Name, run.Unavailable, run.OK, run.Sent)
	}
	if run.RouterCPUSeconds == nil || run.AddedTTFT == nil || run.AddedTTFT.Requests < 50 {
		t.Errorf("router CPU %v, added TTFT %+v: want both routers' figures", run.RouterCPUSeconds, run.AddedTTFT)
	}
	if files, _ := filepath.Glob(filepath.Join(root, "examples", ".bench-live-replica-*")); len(files) != 0 {
		t.Errorf("the replicas' configs were left behind: %v", files)
	}
}
