package faults

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
)

func TestFaultScheduleCountsSpreadAndInterleaving(t *testing.T) {
	const window = 30 * time.Second
	counts := map[kind]int{kindSwap: 20, kindKill: 5, kindBadReload: 3}
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 50; seed++ {
		s := schedule(counts[kindSwap], counts[kindKill], counts[kindBadReload], window, seed)
		if len(s) != 28 {
			t.Fatalf("seed %d: %d faults, want 28", seed, len(s))
		}
		if !slices.Equal(s, schedule(20, 5, 3, window, seed)) {
			t.Fatalf("seed %d: the schedule is not reproducible", seed)
		}
		next := map[kind]int{}
		var order strings.Builder
		for j, f := range s {
			// Equal slots, each fault at its slot's centre.
			if want := time.Duration((float64(j) + 0.5) / 28 * float64(window)); f.At != want {
				t.Fatalf("seed %d: fault %d at %v, want %v", seed, j, f.At, want)
			}
			// Each kind in its own order, covering the window evenly.
			if f.N != next[f.Kind] {
				t.Fatalf("seed %d: fault %d is %v #%d, want #%d", seed, j, f.Kind, f.N, next[f.Kind])
			}
			next[f.Kind]++
			c := float64(counts[f.Kind])
			if off := math.Abs(f.At.Seconds()/window.Seconds() - (float64(f.N)+0.5)/c); off > 0.25/c+4.0/28 {
				t.Errorf("seed %d: %v #%d at %v is %.3f of the window off its even place", seed, f.Kind, f.N, f.At, off)
			}
			// Interleaved: no two kills or two bad reloads in a row.
			if j > 0 && f.Kind != kindSwap && s[j-1].Kind == f.Kind {
				t.Errorf("seed %d: faults %d and %d are both %v", seed, j-1, j, f.Kind)
			}
			order.WriteString(f.Kind.String()[:1])
		}
		for k, c := range counts {
			if next[k] != c {
				t.Errorf("seed %d: %d %v, want %d", seed, next[k], k, c)
			}
		}
		orders[order.String()] = true
	}
	if len(orders) < 2 {
		t.Errorf("50 seeds gave one order: the order is not seeded")
	}
	if s := schedule(0, 0, 0, window, 1); len(s) != 0 {
		t.Errorf("no faults asked, got %v", s)
	}
	s := schedule(0, 3, 0, 6*time.Second, 1)
	if len(s) != 3 || s[0].At != time.Second || s[1].At != 3*time.Second || s[2].At != 5*time.Second {
		t.Errorf("3 kills over 6 s: %+v", s)
	}
}

func TestArrivalTimes(t *testing.T) {
	const rate, d = 200.0, 40 * time.Second
	a := arrivalTimes(rate, d, 1)
	// Poisson: 8000 expected, standard deviation ≈ 89.
	if n := len(a); math.Abs(float64(n)-rate*d.Seconds()) > 5*math.Sqrt(rate*d.Seconds()) {
		t.Errorf("%d arrivals in %v at %v/s", n, d, rate)
	}
	if !slices.IsSorted(a) || a[0] < 0 || a[len(a)-1] >= d {
		t.Errorf("arrivals not sorted within [0, %v): first %v, last %v", d, a[0], a[len(a)-1])
	}
	// Spread over the whole window: each quarter holds about a quarter.
	for q := range 4 {
		lo, hi := time.Duration(q)*d/4, time.Duration(q+1)*d/4
		n := 0
		for _, at := range a {
			if at >= lo && at < hi {
				n++
			}
		}
		if math.Abs(float64(n)-2000) > 5*math.Sqrt(2000) {
			t.Errorf("%d arrivals in [%v, %v), want about 2000", n, lo, hi)
		}
	}
	if !slices.Equal(a, arrivalTimes(rate, d, 1)) {
		t.Error("the same seed gave other arrivals")
	}
	if slices.Equal(a, arrivalTimes(rate, d, 2)) {
		t.Error("another seed gave the same arrivals")
	}
	if n := len(arrivalTimes(10, time.Second/100, 1)); n > 3 {
		t.Errorf("%d arrivals in 10 ms at 10/s", n)
	}
}

func TestFaultResultJSON(t *testing.T) {
	l := newLoad("http://127.0.0.1:1", 10*time.Second)
	ms := time.Millisecond
	for i := range 100 {
		l.record(requestOutcome{at: time.Duration(i) * 100 * ms, ttft: time.Duration(10+i) * ms}) // baseline
		l.record(requestOutcome{at: 10*time.Second + time.Duration(i)*300*ms, ttft: time.Duration(20+i) * ms})
	}
	l.record(requestOutcome{at: 5 * time.Second, reason: "status 503: no endpoint"})
	l.record(requestOutcome{at: 15 * time.Second, reason: "status 503: no endpoint"})
	l.record(requestOutcome{at: 16 * time.Second, reason: "not sent: 2000 requests in flight"})
	l.sent = 202
	res := l.result(10*time.Second, 40*time.Second)
	tally(res, []Event{
		{Kind: "swap", OK: true}, {Kind: "swap", OK: false}, {Kind: "swap", OK: true},
		{Kind: "kill", OK: true}, {Kind: "kill", OK: true},
		{Kind: "bad-reload", OK: true}, {Kind: "bad-reload", OK: false},
	}, []float64{120.5, 340.25})

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"requests": 203, "failed": 3, "swaps": 2, "kills": 2, "bad_reloads_rejected": 1,
		// 100 TTFTs per window, 10..109 ms and 20..119 ms: the p99 sits at rank 0.99·(100−1) = 98.01,
		// between the 99th and the 100th, 108 + 0.01·(109 − 108) = 108.01 and 118 + 0.01 = 118.01
		// (nearest rank, before internal/quantile, gave the 99th: 108 and 118).
		"max_restart_ms": 340.25, "p99_ttft_ms_during_faults": 118.01, "p99_ttft_ms_baseline": 108.01,
		"requests_baseline": 101, "failed_baseline": 1, "requests_during_faults": 102, "failed_during_faults": 2,
		"swap_failures": 1, "kill_failures": 0, "bad_reload_failures": 1, "rate_achieved": 5.1,
	}
	for k, v := range want {
		if g, ok := got[k].(float64); !ok || g != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	failures, _ := got["failures"].(map[string]any)
	if len(failures) != 2 || failures["status 503: no endpoint"] != 2.0 || failures["not sent: 2000 requests in flight"] != 1.0 {
		t.Errorf("failures %v", got["failures"])
	}
	if r, _ := got["restart_ms"].([]any); len(r) != 2 {
		t.Errorf("restart_ms %v", got["restart_ms"])
	}
	if s, _ := got["failure_samples"].([]any); len(s) != 3 {
		t.Errorf("failure_samples %v", got["failure_samples"])
	}

	// No request in a window: percentiles are 0, not a panic; the lists are [] rather than null.
	empty := newLoad("http://127.0.0.1:1", 0).result(0, time.Second)
	tally(empty, nil, nil)
	b, _ = json.Marshal(empty)
	for _, s := range []string{`"p99_ttft_ms_baseline":0`, `"restart_ms":[]`, `"faults":[]`, `"failures":{}`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("%s lacks %s", b, s)
		}
	}
}

// faultConfig writes a config whose plugin binaries are empty executables (enough for the
// config's validation) and returns its file.
func faultConfig(t *testing.T, scorerType string) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range []string{"scorer", "picker"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	yml := `plugins:
  - name: picker
    type: weighted-random-picker
    path: ./picker
  - name: latency-scorer
    type: ` + scorerType + `
    path: ./scorer
    version: ">=1.0.0, <2.0.0"
    timeout: 30ms
    parameters:
      ttftWeight: 0.5
pipeline:
  scorers:
    - pluginRef: latency-scorer
      weight: 2
  picker:
    pluginRef: picker
`
	file := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestFaultTargetsAndSwapBody(t *testing.T) {
	cfg, err := config.Load(faultConfig(t, "latency-scorer"))
	if err != nil {
		t.Fatal(err)
	}
	spec, target, err := targets(cfg, "pipeline.yaml", true, true)
	if err != nil || spec.Name != "latency-scorer" || target != "latency-scorer" {
		t.Fatalf("spec %+v, target %q, err %v", spec, target, err)
	}
	body, err := swapBody(spec, "most")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type, Path, Version, Timeout string
		Parameters                   map[string]any
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != "latency-scorer" || got.Path != "./scorer" || got.Version != ">=1.0.0, <2.0.0" || got.Timeout != "30ms" ||
		got.Parameters["headroomSelectionStrategy"] != "most" || got.Parameters["ttftWeight"] != 0.5 {
		t.Errorf("swap body %s", body)
	}
	if _, ok := spec.Parameters["headroomSelectionStrategy"]; ok {
		t.Error("swapBody modified the config's parameters")
	}

	other, err := config.Load(faultConfig(t, "other-scorer"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := targets(other, "mine.yaml", true, true); err == nil || !strings.Contains(err.Error(), "other-scorer") ||
		!strings.HasPrefix(err.Error(), "mine.yaml: ") {
		t.Errorf("swaps on a non-latency scorer: %v", err)
	}
	if _, target, err := targets(other, "mine.yaml", false, true); err != nil || target != "latency-scorer" {
		t.Errorf("no swaps: target %q, err %v", target, err)
	}

	// Built-in plugins only: nothing to kill, but a reload can still be broken.
	builtins, err := config.Parse(filepath.Join(t.TempDir(), "builtins.yaml"), []byte(`plugins:
  - {name: least-inflight, type: queue-scorer}
  - {name: max-score, type: max-score-picker}
pipeline:
  scorers: [{pluginRef: least-inflight}]
  picker: {pluginRef: max-score}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := targets(builtins, "b.yaml", false, true); err == nil || !strings.Contains(err.Error(), "--kills 0") {
		t.Errorf("kills without plugin processes: %v", err)
	}
	if _, target, err := targets(builtins, "b.yaml", false, false); err != nil || target != "least-inflight" {
		t.Errorf("built-ins only: target %q, err %v", target, err)
	}
}

func TestBadConfigs(t *testing.T) {
	file := faultConfig(t, "latency-scorer")
	valid, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range badConfigKinds {
		data, err := badConfig(valid, "latency-scorer", kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		cfg, perr := config.Parse(file, data)
		switch kind {
		case "broken-yaml", "missing-binary":
			if perr == nil {
				t.Errorf("%s: the config is valid:\n%s", kind, data)
			}
		case "unknown-parameter":
			// Valid for the config; the plugin's Configure is what rejects it.
			if perr != nil {
				t.Fatalf("%s: %v", kind, perr)
			}
			p := cfg.Plugin("latency-scorer")
			if p.Parameters["faultbenchNoSuchParameter"] != 1 || p.Parameters["ttftWeight"] != 0.5 || p.Path != "./scorer" {
				t.Errorf("%s: scorer %+v", kind, p)
			}
		}
	}
	if data, _ := badConfig(valid, "latency-scorer", "missing-binary"); !strings.Contains(string(data), "faultbench-no-such-plugin") {
		t.Errorf("missing-binary:\n%s", data)
	}
	if _, err := badConfig(valid, "nobody", "unknown-parameter"); err == nil {
		t.Error("a plugin the config does not declare was broken")
	}
	// The picker has no parameters: they are added.
	data, err := badConfig(valid, "picker", "unknown-parameter")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := config.Parse(file, data); err != nil || cfg.Plugin("picker").Parameters["faultbenchNoSuchParameter"] != 1 {
		t.Errorf("picker: %v\n%s", err, data)
	}
}
