package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/bench"
)

// bench live runs the built binary's own serve with a built-in-stage config, and the two
// client-side baselines, on the same 40 arrivals of a small trace replayed 4 times faster.
// writeAzureTrace writes an Azure 2023 trace of n rows 50 ms apart, row i with a prompt of
// 64 + (29·i mod 400) tokens and 3 + (i mod 9) output tokens, and returns its path.
func writeAzureTrace(t *testing.T, n int) string {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "trace.csv")
	var b strings.Builder
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	t0 := time.Date(2023, 11, 16, 18, 0, 0, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(&b, "%s,%d,%d\n", t0.Add(time.Duration(i)*50*time.Millisecond).Format("2006-01-02 15:04:05.0000000"), 64+29*i%400, 3+i%9)
	}
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return trace
}

func TestBenchLive(t *testing.T) {
	trace := writeAzureTrace(t, 40) // 4 times faster: 40 arrivals over 0.49 s
	profiles := t.TempDir()
	stdout, stderr, code := foresight(t, "bench", "live", "--configs", "examples/round-robin.yaml",
		"--baselines", "round-robin,least-outstanding", "--scenario", "azure-conv", "--trace", trace, "--servers", "2",
		"--speedup", "4", "--class", "chat:1:ttft=5000", "--router-cpuprofile", profiles, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res bench.LiveResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if res.Requests != 40 || len(res.Runs) != 3 {
		t.Fatalf("%d requests, %d runs; want 40 and 3:\n%s", res.Requests, len(res.Runs), stderr)
	}
	for _, run := range res.Runs {
		if run.Unavailable != "" {
			t.Errorf("%s: unavailable: %s", run.Name, run.Unavailable)
			continue
		}
		if run.Arrivals != res.Runs[0].Arrivals || run.Sent != 40 || run.Skipped != 0 {
			t.Errorf("%s: sent %d (%d skipped), arrivals %s; want the 40 of %s", run.Name, run.Sent, run.Skipped, run.Arrivals, res.Runs[0].Arrivals)
		}
		if run.OK != 40 || run.SLOAttainment == nil {
			t.Errorf("%s: %d ok (%d shed, %d errors, %d cut), SLO attainment %v; want all 40 ok", run.Name, run.OK, run.Shed, run.Errors, run.Cut, run.SLOAttainment)
		}
		sum := 0
		for _, s := range run.ServerStats {
			sum += s.Requests
		}
		if sum != 40 || run.Dispatches != 40 || len(run.ServerStats) != 2 {
			t.Errorf("%s: %d servers' requests sum to %d (%d dispatches), want 2 summing to 40", run.Name, len(run.ServerStats), sum, run.Dispatches)
		}
	}
	router := res.Runs[0]
	if router.Name != "round-robin.yaml" || router.RouterCPUSeconds == nil || *router.RouterCPUSeconds <= 0 || router.RouterPID == 0 {
		t.Fatalf("router run %+v: want its CPU time and pid", router)
	}
	// The router's round-robin gives each server 20.
	if s := router.ServerStats; s[0].Requests != 20 || s[1].Requests != 20 {
		t.Errorf("round-robin.yaml: %+v, want 20 and 20", s)
	}
	// The router process is gone: no process of that pid runs the binary.
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(router.RouterPID) + "/exe"); err == nil && exe == hostBin {
		t.Errorf("the router process %d (%s) outlived the bench", router.RouterPID, exe)
	}
	// Its access lines give the TTFT it added to each streamed request.
	if a := router.AddedTTFT; a == nil || a.Requests != 40 || a.Ms.P50 <= 0 {
		t.Errorf("round-robin.yaml: added TTFT %+v, want 40 requests and a positive p50", a)
	}
	// The router wrote its CPU profile when it stopped: a gzipped profile.proto.
	if prof, err := os.ReadFile(filepath.Join(profiles, "round-robin.pprof")); err != nil || len(prof) < 2 || prof[0] != 0x1f || prof[1] != 0x8b {
		t.Errorf("the router's CPU profile: %d bytes, %v; want a gzipped profile", len(prof), err)
	}
	if !strings.Contains(stderr, "client:least-outstanding") || !strings.Contains(stderr, "TTFT p50") {
		t.Errorf("no table on stderr:\n%s", stderr)
	}
}
