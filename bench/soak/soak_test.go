package soak

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildBinaries builds the foresight binary and the plugins named into dir/bin, as test/e2e
// builds them (go build from the repository's root), and returns the foresight binary's path.
func buildBinaries(t *testing.T, dir string, plugins ...string) string {
	t.Helper()
	builds := map[string]string{filepath.Join(dir, "bin", "foresight"): "./cmd/foresight"}
	for _, p := range plugins {
		builds[filepath.Join(dir, "bin", "plugins", p)] = "./plugins/" + p
	}
	for out, pkg := range builds {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = filepath.Join("..", "..")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	return filepath.Join(dir, "bin", "foresight")
}

// A few seconds of soak through the real binaries — foresight serve with a scorer and a picker,
// each its own process — with two kills and two swaps: every request answered in full, the
// faults performed, every request counted by the router, the router and the plugins sampled,
// and nothing left running.
func TestSoakEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the foresight binary and two plugins")
	}
	dir := t.TempDir()
	bin := buildBinaries(t, dir, "scorer", "picker")
	cfg := filepath.Join(dir, "soak.yaml")
	yaml := "plugins:\n" +
		"  - {name: lat, type: latency-scorer, path: bin/plugins/scorer}\n" +
		"  - {name: draw, type: weighted-random-picker, path: bin/plugins/picker}\n" +
		"pipeline:\n" +
		"  stageTimeout: 5s\n" + // generous: a loaded 2-core machine; the test checks answers, not latency
		"  scorers: [{pluginRef: lat}]\n" +
		"  picker: {pluginRef: draw}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stops int
	res, err := Run(context.Background(), Options{Config: cfg, Binary: bin, Servers: 2, Rate: 20, Duration: 4 * time.Second,
		Warmup: time.Second, SampleEvery: 250 * time.Millisecond, KillEvery: 2 * time.Second, SwapEvery: 2 * time.Second,
		MaxTokens: 4, Seed: 1, AtExit: func(func()) { stops++ }})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = res.WriteText(&text)
	if !res.Pass || res.Sent == 0 || res.OK != res.Sent || res.Sent != res.Requests {
		t.Fatalf("%d of %d sent, %d ok; want all, and a pass:\n%s", res.Sent, res.Requests, res.OK, text.String())
	}
	if res.Kills != 2 || res.Swaps != 2 || res.MaxRestartMs <= 0 {
		t.Errorf("%d kills, %d swaps, max restart %v ms; want 2, 2 and a restart time:\n%s", res.Kills, res.Swaps, res.MaxRestartMs, text.String())
	}
	if a := res.Accounting; !a.OK || a.Counted != res.Sent || a.ByCode["200"] != res.Sent {
		t.Errorf("accounting %+v, want every one of %d requests counted under 200", a, res.Sent)
	}
	if res.RouterRSSMB.Start <= 0 || res.RouterGoroutines.Start <= 0 || res.PluginsRSSMB.Start <= 0 ||
		res.RouterGoroutines.Fitted < 2 || len(res.PluginRSSMBByType) != 2 || res.RouterCPUMsPerRequest <= 0 ||
		res.RouterPrefixBlocks.End <= 0 {
		t.Errorf("samples: router RSS %+v, goroutines %+v, prefix blocks %+v, plugins %+v by type %v, CPU %v ms per request", res.RouterRSSMB,
			res.RouterGoroutines, res.RouterPrefixBlocks, res.PluginsRSSMB, res.PluginRSSMBByType, res.RouterCPUMsPerRequest)
	}
	if res.Streamed == 0 || res.Whole == 0 || res.Chat == 0 || res.Chat == res.Sent {
		t.Errorf("the mix: %d streamed, %d whole, %d chat of %d", res.Streamed, res.Whole, res.Chat, res.Sent)
	}
	if stops < 2 {
		t.Errorf("%d stop functions registered, want the router's and the servers'", stops)
	}
	// The router process is gone: no process of that pid runs the binary.
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(res.RouterPID) + "/exe"); err == nil && exe == bin {
		t.Errorf("the router process %d (%s) outlived the bench", res.RouterPID, exe)
	}
}
