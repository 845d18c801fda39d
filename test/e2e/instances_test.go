package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/sim/emulator"
)

// Several instances of one binary in one process, and the fused calls that reach consecutive
// filters among them in one round trip.

// TestExampleAffinityFiltersShareAProcess: in examples/pipeline.yaml the strict and the loose
// affinity filter are two instances of one process, each configured with its own threshold.
func TestExampleAffinityFiltersShareAProcess(t *testing.T) {
	p := buildExample(t)
	strict, loose := plugin(t, p, "strict-affinity").Status(), plugin(t, p, "loose-affinity").Status()
	if strict.PID == 0 || strict.PID != loose.PID || strict.Instance == "" || strict.Instance == loose.Instance {
		t.Fatalf("strict %+v, loose %+v: want one process, two instances", strict, loose)
	}
	// The thresholds differ: with prefix matches 0, 0.25, 0.5, 0.75 neither reaches 0.80 or 0.99,
	// so both keep everything; a cycle whose best match is 0.85 is kept by the loose one only.
	c := testCycle(1)
	c.Endpoints[3].State.PrefixMatch = 0.85
	tr := p.Run(context.Background(), c)
	noFallbacks(t, tr)
	if strict, loose := tr.Filters[0], tr.Filters[1]; len(strict.Kept) != 4 || !slices.Equal(loose.Kept, []int{3}) {
		t.Errorf("strict kept %v (want all 4), loose kept %v (want [3])", strict.Kept, loose.Kept)
	}
}

// pickyYAML chains three instances of the picky filter: the first drops position 0, the second
// is told to fail, the third drops position 2 of what it sees.
const pickyYAML = `plugins:
  - {name: drop-first, type: picky-filter, path: ../bin/picky, parameters: {drop: 0}}
  - {name: broken, type: picky-filter, path: ../bin/picky, parameters: {fail: true}}
  - {name: drop-third, type: picky-filter, path: ../bin/picky, parameters: {drop: 2}}
  - {name: pick, type: max-score-picker}
pipeline:
  stageTimeout: 5s
  filters: [{pluginRef: drop-first}, {pluginRef: broken}, {pluginRef: drop-third}]
  picker: {pluginRef: pick}
`

// TestFusedCallWithAFailingStage: three filters of one process travel in one call per cycle;
// the one that fails falls back (keeps what it was given) and the others' answers stand, each
// recorded as its own stage. When the process dies the whole call fails and every filter of it
// falls back, until the restarted process serves the fused call again.
func TestFusedCallWithAFailingStage(t *testing.T) {
	p := buildFile(t, writeConfig(t, "picky.yaml", pickyYAML))
	pid := plugin(t, p, "drop-first").Status().PID
	for _, name := range []string{"broken", "drop-third"} {
		if st := plugin(t, p, name).Status(); st.PID != pid || st.Instance == "" {
			t.Fatalf("%s: %+v, want an instance of process %d", name, st, pid)
		}
	}
	for seed := range uint64(10) {
		tr := p.Run(context.Background(), testCycle(seed))
		checkPickyTrace(t, tr, "")
	}
	stats := map[string]pipeline.Stats{}
	for _, s := range p.Stats() {
		stats[s.Plugin] = s
	}
	if b := stats["drop-first"]; b.Calls != 10 || b.Batches != 10 || stats["drop-third"].Batches != 10 || stats["broken"].Fallbacks != 10 ||
		stats["drop-first"].Fallbacks != 0 || stats["drop-third"].Fallbacks != 0 {
		t.Errorf("stats %+v: want 10 calls per filter in 10 shared round trips, 10 fallbacks for broken only", stats)
	}

	// The process dies: the fused call fails, so each of its filters falls back and keeps all.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	sawDown, deadline := false, time.Now().Add(20*time.Second)
	for seed := uint64(100); ; seed++ {
		tr := p.Run(context.Background(), testCycle(seed))
		if tr.Filters[0].Fallback != "" {
			sawDown = true
			for _, f := range tr.Filters {
				if f.Fallback == "" || len(f.Kept) != 4 {
					t.Fatalf("while the process is down: filter %s kept %v with fallback %q; want all 4 by fallback", f.Plugin, f.Kept, f.Fallback)
				}
			}
		} else if st := plugin(t, p, "drop-third").Status(); sawDown && st.Restarts == 1 && st.PID != pid {
			checkPickyTrace(t, tr, "after the restart: ")
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fallback and restart within 20s (saw the fallback: %v)", sawDown)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkPickyTrace checks one cycle of pickyYAML over testCycle's four endpoints.
func checkPickyTrace(t *testing.T, tr *pipeline.Trace, when string) {
	t.Helper()
	want := [][]int{{1, 2, 3}, {1, 2, 3}, {1, 2}}
	if len(tr.Filters) != 3 {
		t.Fatalf("%s%d filter traces, want 3", when, len(tr.Filters))
	}
	for k, f := range tr.Filters {
		if !f.Fused || !slices.Equal(f.Kept, want[k]) {
			t.Errorf("%sfilter %s: fused %v, kept %v; want fused, kept %v", when, f.Plugin, f.Fused, f.Kept, want[k])
		}
		if failed := f.Fallback != ""; failed != (f.Plugin == "broken") {
			t.Errorf("%sfilter %s: fallback %q", when, f.Plugin, f.Fallback)
		}
	}
	if fb := tr.Filters[1].Fallback; !strings.Contains(fb, "picky: told to fail") {
		t.Errorf("%sthe broken filter's fallback reason %q does not carry its error", when, fb)
	}
	if tr.Outcome() != "picked" || !slices.Contains([]int{1, 2}, tr.Order[0]) {
		t.Errorf("%soutcome %s, order %v: want a pick among [1 2]", when, tr.Outcome(), tr.Order)
	}
}

// instancesYAML is a router whose two filters are instances of the affinity binary; strictPath
// is the strict one's binary.
func instancesYAML(fleet *emulator.Fleet, strictPath string) string {
	addrs := fleet.Addrs()
	return fmt.Sprintf(`plugins:
  - {name: strict, type: prefix-cache-affinity-filter, path: %s, parameters: {affinityThreshold: 0.99}}
  - {name: loose, type: prefix-cache-affinity-filter, path: ../bin/plugins/affinity, parameters: {affinityThreshold: 0.8}}
  - {name: pick, type: max-score-picker}
pipeline:
  filters: [{pluginRef: strict}, {pluginRef: loose}]
  picker: {pluginRef: pick}
  stageTimeout: 5s
# The swaps below launch bin/affinity-copy, outside the file's own plugin folder.
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0", pluginDirs: [../bin/plugins, ../bin]}
endpoints:
  static:
    - {id: a, address: %s}
    - {id: b, address: %s}
`, strictPath, addrs[0], addrs[1])
}

// TestSwapOneInstanceOfASharedProcess: two filters share a process; swapping one (new
// parameters, then a binary of its own) leaves the other served by the same process throughout,
// and the router serves every request.
func TestSwapOneInstanceOfASharedProcess(t *testing.T) {
	fleet := startFleet(t)
	r := startFile(t, writeConfig(t, "instances.yaml", instancesYAML(fleet, "../bin/plugins/affinity")))
	served(t, r)
	d := describe(t, r)
	loose := described(t, d, "loose")
	if strict := described(t, d, "strict"); strict.PID == 0 || strict.PID != loose.PID || strict.Instance == loose.Instance {
		t.Fatalf("strict %+v, loose %+v: want two instances of one process", strict, loose)
	}
	stillServing := func(when string) {
		t.Helper()
		served(t, r)
		now := described(t, describe(t, r), "loose")
		if now.PID != loose.PID || now.Instance != loose.Instance || now.Restarts != 0 || !now.Up {
			t.Errorf("%s: loose is %+v, want it unchanged from %+v", when, now, loose)
		}
	}

	// New parameters: a new instance in the same process (a swap is pinned, the file's plugins
	// are not: a pin the binary satisfies is no other process); the old one is dropped.
	code, body := adminCall(t, r, "PUT", "/admin/stages/filters.0",
		`{"type":"prefix-cache-affinity-filter","path":"../bin/plugins/affinity","sha256":"`+checksum(t, pluginBin("affinity"))+`","parameters":{"affinityThreshold":0.95}}`)
	if code != 200 {
		t.Fatalf("swap with new parameters: %d %s", code, body)
	}
	strict := described(t, describe(t, r), "strict")
	if strict.PID != loose.PID {
		t.Errorf("new parameters: strict runs in process %d, want the shared %d", strict.PID, loose.PID)
	}
	stillServing("after the parameters swap")

	// Another binary: strict gets a process of its own; loose keeps the shared one.
	other := filepath.Join(root, "bin", "affinity-copy")
	data, err := os.ReadFile(pluginBin("affinity"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, append(data, 0), 0o755); err != nil { // a different checksum
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(other) })
	code, body = adminCall(t, r, "PUT", "/admin/stages/filters.0",
		`{"type":"prefix-cache-affinity-filter","path":"../bin/affinity-copy","sha256":"`+checksum(t, other)+`","parameters":{"affinityThreshold":0.99}}`)
	if code != 200 {
		t.Fatalf("swap to another binary: %d %s", code, body)
	}
	strict = described(t, describe(t, r), "strict")
	if strict.PID == 0 || strict.PID == loose.PID {
		t.Errorf("another binary: strict runs in process %d, want one of its own (loose: %d)", strict.PID, loose.PID)
	}
	stillServing("after the binary swap")
}

// checksum is the SHA-256 a swap of the binary at path pins.
func checksum(t *testing.T, path string) string {
	t.Helper()
	sum, err := pluginhost.Checksum(path)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
