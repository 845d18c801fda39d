package soak

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/buildbin"
)

// buildBinaries builds the foresight binary and the plugins named into dir/bin, as test/e2e
// builds them (internal/buildbin), and returns the foresight binary's path.
func buildBinaries(t *testing.T, dir string, plugins ...string) string {
	t.Helper()
	repo := filepath.Join("..", "..")
	bin := filepath.Join(dir, "bin", "foresight")
	if err := buildbin.Host(repo, bin); err != nil {
		t.Fatal(err)
	}
	if err := buildbin.PluginsInto(repo, filepath.Join(dir, "bin", "plugins"), plugins...); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Ten seconds of soak through the real binaries — foresight serve with a scorer and a picker,
// each its own process — with two kills, two swaps, a frozen plugin, a server cutting every third
// stream and a SIGTERM with streams in flight: every request answered in full or, cut after its
// first event, ended with an error event; the faults performed, every request counted by the
// router, the router and the plugins sampled, the drain's streams each complete or cut with an
// error event, and nothing left running.
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
		"server: {shutdownGrace: 2s}\n" + // the drain's long streams outlast it, its short ones do not
		"pipeline:\n" +
		"  stageTimeout: 1s\n" + // generous: a loaded 2-core machine; the test checks answers, not latency
		"  scorers: [{pluginRef: lat}]\n" +
		"  picker: {pluginRef: draw}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stops int
	res, err := Run(context.Background(), Options{Config: cfg, Binary: bin, Servers: 2, Rate: 20, Duration: 10 * time.Second,
		Warmup: time.Second, SampleEvery: 250 * time.Millisecond, KillEvery: 5 * time.Second, SwapEvery: 5 * time.Second,
		StopEvery: 10 * time.Second, TruncateEvery: 3, Drain: 4, MaxTokens: 4, Seed: 1, AtExit: func(func()) { stops++ }})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = res.WriteText(&text)
	if !res.Pass || res.Sent == 0 || res.OK+res.Cut != res.Sent || res.Sent != res.Requests {
		t.Fatalf("%d of %d sent, %d ok, %d cut; want all ok or cut, and a pass:\n%s", res.Sent, res.Requests, res.OK, res.Cut, text.String())
	}
	if res.Kills != 2 || res.Swaps != 2 || res.MaxRestartMs <= 0 || res.Stops != 1 || res.MaxRecoverMs <= 0 {
		t.Errorf("%d kills, %d swaps, %d stops, max restart %v ms, max recovery %v ms; want 2, 2, 1 and times:\n%s",
			res.Kills, res.Swaps, res.Stops, res.MaxRestartMs, res.MaxRecoverMs, text.String())
	}
	if tr := res.Truncated; tr == nil || tr.CutAfterFirst == 0 || res.Cut != int(tr.CutAfterFirst) || res.CutByCode["upstream_stream_broken"] != res.Cut {
		t.Errorf("truncated %+v, %d cut by code %v; want cuts after the first event, each reaching the client as upstream_stream_broken:\n%s",
			res.Truncated, res.Cut, res.CutByCode, text.String())
	}
	if a := res.Accounting; !a.OK || a.Counted != res.Sent || a.ByCode["200"] != res.OK || a.ByCode["502"] != res.Cut {
		t.Errorf("accounting %+v, want every one of %d requests counted, %d under 200 and %d under 502", a, res.Sent, res.OK, res.Cut)
	}
	// Two long streams outlast the 2 s grace, two short ones and the whole request do not.
	if d := res.Drain; d == nil || d.Cut != 2 || d.Completed+d.Refused != 3 || d.ExitCode < 0 {
		t.Errorf("drain %+v; want the 2 long streams cut, the rest complete, and the router's own exit:\n%s", res.Drain, text.String())
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
