package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"

	"github.com/foresight-router/foresight/host/router"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/rs/zerolog"
)

// reloadYAML is a router with the real producer and latency scorer, the scorer's strategy set
// to mode (least or most).
func reloadYAML(fleet *emulator.Fleet, mode string, extra string) string {
	addrs := fleet.Addrs()
	return fmt.Sprintf(`plugins:
  - name: predictor
    type: predicted-latency-producer
    path: ../bin/plugins/producer
  - name: latency
    type: latency-scorer
    path: ../bin/plugins/scorer
    parameters: {headroomSelectionStrategy: %s}
  - name: pick
    type: max-score-picker
%spipeline:
  producer: {pluginRef: predictor}
  scorers:
    - pluginRef: latency
  picker: {pluginRef: pick}
  stageTimeout: 5s
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
endpoints:
  static:
    - {id: a, address: %s}
    - {id: b, address: %s}
`, mode, extra, addrs[0], addrs[1])
}

func startFleet(t *testing.T) *emulator.Fleet {
	t.Helper()
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	return fleet
}

// startFile runs the router of a config file and stops it when the test ends.
func startFile(t *testing.T, file string) *router.Router {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return startConfig(t, cfg)
}

// startConfig runs the router of cfg and stops it when the test ends.
func startConfig(t *testing.T, cfg *config.Config) *router.Router {
	t.Helper()
	r, err := router.Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// admin sends an admin request and returns the status and body.
func adminCall(t *testing.T, r *router.Router, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+r.AdminAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func describe(t *testing.T, r *router.Router) admin.Description {
	t.Helper()
	code, body := adminCall(t, r, "GET", "/admin/pipeline", "")
	var d admin.Description
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil {
		t.Fatalf("GET /admin/pipeline: %d %s (%v)", code, body, err)
	}
	return d
}

func pid(t *testing.T, d admin.Description, name string) int {
	t.Helper()
	return described(t, d, name).PID
}

// served sends one streamed chat request through the router and fails the test unless it is
// answered 200 with a complete stream.
func served(t *testing.T, r *router.Router) {
	t.Helper()
	resp := post(t, context.Background(), "http://"+r.Addr(), chat(4))
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("request: %d %s", resp.StatusCode, body)
	}
}

func metric(t *testing.T, r *router.Router, series string) float64 {
	t.Helper()
	_, body := adminCall(t, r, "GET", "/metrics", "")
	m := regexp.MustCompile("(?m)^" + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no series %s in /metrics", series)
	}
	var v float64
	fmt.Sscanf(m[1], "%g", &v)
	return v
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReloadKeepsTheProducer: the file changes, POST /admin/reload and PUT /admin/stages each
// swap the scorer while requests are served; the producer process (and its learned state) stays
// the same throughout, and a reload that fails leaves the pipeline serving.
func TestReloadKeepsTheProducer(t *testing.T) {
	fleet := startFleet(t)
	file := writeConfig(t, "reload.yaml", reloadYAML(fleet, "least", ""))
	r := startFile(t, file)
	served(t, r)
	d := describe(t, r)
	producer, scorer := pid(t, d, "predictor"), described(t, d, "latency")
	if d.Generation != 1 || producer == 0 || scorer.PID == 0 || scorer.Instance == "" {
		t.Fatalf("first pipeline %+v", d)
	}

	// 1. The file changes: the watcher reloads; only the scorer changes. Its binary hosts several
	// instances, so the new parameters make a new instance in the running process.
	if err := os.WriteFile(file, []byte(reloadYAML(fleet, "most", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the file's reload", func() bool { return describe(t, r).Generation == 2 })
	d = describe(t, r)
	if now := described(t, d, "latency"); pid(t, d, "predictor") != producer || now.PID != scorer.PID || now.Instance == scorer.Instance {
		t.Errorf("after the file changed: producer pid %d (was %d), scorer pid %d instance %q (was %d %q)",
			pid(t, d, "predictor"), producer, now.PID, now.Instance, scorer.PID, scorer.Instance)
	}
	served(t, r)

	// 2. A bad file: POST /admin/reload answers 422 with the reason; generation 2 serves on.
	if err := os.WriteFile(file, []byte(reloadYAML(fleet, "sideways", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, body := adminCall(t, r, "POST", "/admin/reload", "")
	if code != 422 || !strings.Contains(body, "headroomSelectionStrategy") || !strings.Contains(body, "previous pipeline keeps serving") {
		t.Errorf("bad reload: %d %s", code, body)
	}
	if describe(t, r).Generation != 2 || metric(t, r, `foresight_reloads_total{result="failed"}`) < 1 {
		t.Error("a failed reload changed the pipeline or was not counted")
	}
	served(t, r)

	// 3. PUT /admin/stages swaps the scorer back without the file.
	code, body = adminCall(t, r, "PUT", "/admin/stages/scorers.0", pinned(t,
		`{"type":"latency-scorer","path":"../bin/plugins/scorer","parameters":{"headroomSelectionStrategy":"least"},"weight":2}`))
	if code != 200 || !strings.Contains(body, `"kept": [`) {
		t.Fatalf("swap: %d %s", code, body)
	}
	d = describe(t, r)
	if d.Generation < 3 || pid(t, d, "predictor") != producer || *d.Slots[1].Weight != 2 {
		t.Errorf("after the swap: %+v", d)
	}
	if metric(t, r, `foresight_reloads_total{result="ok"}`) < 2 {
		t.Error("successful reloads not counted")
	}
	served(t, r)
}

// TestPluginRestartsAfterKillAndHang: a SIGKILLed scorer is restarted within a second, and a
// scorer that stops answering is cut off by its deadline, killed after missing deadlines for
// 2 s, and restarted the same way; requests are served throughout by the fallback.
func TestPluginRestartsAfterKillAndHang(t *testing.T) {
	fleet := startFleet(t)
	yaml := strings.Replace(reloadYAML(fleet, "least", `  - name: stall
    type: stall-scorer
    path: ../bin/stall
    parameters: {stallAfter: 2}
`), "    - pluginRef: latency\n", "    - pluginRef: latency\n    - pluginRef: stall\n", 1)
	yaml = strings.Replace(yaml, "stageTimeout: 5s", "stageTimeout: 200ms", 1)
	r := startFile(t, writeConfig(t, "restart.yaml", yaml))

	scorer := pid(t, describe(t, r), "latency")
	if err := syscall.Kill(scorer, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the killed scorer's restart", func() bool {
		p := described(t, describe(t, r), "latency")
		return p.Restarts == 1 && p.Up
	})
	if p := described(t, describe(t, r), "latency"); p.PID == scorer || p.LastRestartMs <= 0 || p.LastRestartMs >= 1000 {
		t.Errorf("restarted scorer: pid %d (was %d), restart took %.1f ms", p.PID, scorer, p.LastRestartMs)
	}

	stalled := pid(t, describe(t, r), "stall")
	waitUntil(t, "the hung scorer's restart", func() bool {
		served(t, r) // each request's cycle calls the stall scorer: 2 answers, then missed deadlines
		p := described(t, describe(t, r), "stall")
		return p.Hangs == 1 && p.Restarts == 1 && p.Up
	})
	if p := described(t, describe(t, r), "stall"); p.PID == stalled || p.LastRestartMs >= 1000 {
		t.Errorf("restarted stall scorer: pid %d (was %d), restart took %.1f ms", p.PID, stalled, p.LastRestartMs)
	}
	if metric(t, r, `foresight_plugin_restarts_total{plugin="stall"}`) != 1 {
		t.Error("the hang's restart is not counted")
	}
}

func described(t *testing.T, d admin.Description, name string) admin.Plugin {
	t.Helper()
	for _, p := range d.Plugins {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no plugin %q", name)
	return admin.Plugin{}
}
