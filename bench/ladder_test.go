package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/stats"
)

// slotOptions is a small, fast setting: the slot engine on a ShareGPT-like mix.
func slotOptions(servers int) RoutingOptions {
	return RoutingOptions{Scenario: "sharegpt", Servers: servers, Requests: 200, Seed: 1, Preset: "sim-8b-h100-32slots",
		Noise: 0.05, Strategies: "rr,oracle", Examples: "../examples"}
}

// slots sets every server's slots (or max_num_seqs) to n and its speed to speed: fewer slots
// make shorter measuring runs.
func slots(n int, speed float64) func(*cluster.Config) {
	return func(c *cluster.Config) {
		for i := range c.Engines {
			c.Engines[i].MaxNumSeqs, c.Engines[i].Speed = n, speed
		}
	}
}

func saturationOf(t *testing.T, o RoutingOptions, tweak func(*cluster.Config)) Saturation {
	t.Helper()
	w, err := routingWorkload(o)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := routingFleet(o)
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(&fleet)
	}
	s, err := MeasureSaturation(fleet, w.Requests)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Measured || !(s.FleetRPS > 0) || s.Unstable <= s.FleetRPS || s.Unstable > s.FleetRPS*saturationTolerance*1.0001 {
		t.Fatalf("saturation %+v: want a positive rate with the unstable one just above it", s)
	}
	return s
}

// The saturation rate is deterministic, scales with the fleet, and falls with slower servers
// (a Speed 2 fleet, the 70B slot preset), for both engine families.
func TestSaturation(t *testing.T) {
	small := func(servers int) RoutingOptions { o := slotOptions(servers); o.Requests = 100; return o }
	two := saturationOf(t, small(2), slots(4, 1))
	if again := saturationOf(t, small(2), slots(4, 1)); again.FleetRPS != two.FleetRPS || again.Runs != two.Runs {
		t.Fatalf("two measurements with seed 1 differ: %+v and %+v", two, again)
	}
	if math.Abs(two.PerServerRPS*2-two.FleetRPS) > 1e-9 {
		t.Errorf("per server %v, fleet %v on 2 servers", two.PerServerRPS, two.FleetRPS)
	}
	four := saturationOf(t, small(4), slots(4, 1))
	if r := four.FleetRPS / two.FleetRPS; r < 1.7 || r > 2.3 {
		t.Errorf("4 servers saturate at %.2f req/s, 2 at %.2f: ratio %.2f, want about 2", four.FleetRPS, two.FleetRPS, r)
	}
	slow := saturationOf(t, small(2), slots(4, 2))
	if r := slow.FleetRPS / two.FleetRPS; r < 0.4 || r > 0.65 {
		t.Errorf("Speed 2 saturates at %.2f req/s against %.2f: ratio %.2f, want about a half", slow.FleetRPS, two.FleetRPS, r)
	}
	big := small(2)
	big.Preset = "sim-70b-h100-tp8-32slots"
	if b := saturationOf(t, big, slots(4, 1)); b.FleetRPS >= two.FleetRPS*0.8 {
		t.Errorf("the 70B preset saturates at %.2f req/s, the 8B one at %.2f: want it clearly lower", b.FleetRPS, two.FleetRPS)
	}
	// The batch family, with a small max_num_seqs too.
	batch := RoutingOptions{Scenario: "sharegpt", Servers: 2, Requests: 100, Seed: 1, Preset: "llama-3.1-8b-h100-tp2", Noise: 0.05}
	fast, slowBatch := saturationOf(t, batch, slots(4, 1)), saturationOf(t, batch, slots(4, 2))
	t.Logf("slot: 2 servers %.2f, 4 servers %.2f, Speed 2 %.2f req/s; batch: %.2f, Speed 2 %.2f", two.FleetRPS, four.FleetRPS, slow.FleetRPS, fast.FleetRPS, slowBatch.FleetRPS)
	if slowBatch.FleetRPS >= fast.FleetRPS*0.8 {
		t.Errorf("batch family: Speed 2 saturates at %.2f req/s, Speed 1 at %.2f: want it clearly lower", slowBatch.FleetRPS, fast.FleetRPS)
	}
}

// Below the saturation rate round-robin's queues drain: at load 0.5 its TTFT stays near the
// unloaded TTFT (load 0.05); at 1.5 they grow and the TTFT with them. The ladder is
// deterministic and its JSON has the documented shape.
func TestLadder(t *testing.T) {
	o := LadderOptions{RoutingOptions: slotOptions(2), Loads: []float64{0.05, 0.5, 1.5}}
	run := func() (*LadderResult, string) {
		res, err := RunLadder(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Loads {
			for name, s := range r.Result.Strategies {
				s.WallSeconds = 0
				r.Result.Strategies[name] = s
			}
		}
		c := *res // the rungs, whether the rate was measured or given
		c.Saturation = Saturation{FleetRPS: res.Saturation.FleetRPS, PerServerRPS: res.Saturation.PerServerRPS}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return res, string(b)
	}
	res, a := run()
	measured := res.Saturation.FleetRPS
	// Given the measured rate (--saturation), the ladder repeats itself exactly.
	o.Saturation = measured
	if _, b := run(); a != b {
		t.Fatalf("the ladder at the measured saturation rate and at that rate given differ:\n%s\n%s", a, b)
	}
	ttft := func(i int) float64 { return res.Loads[i].Result.Strategies["rr"].TTFTMs.P50 }
	if idle, half := ttft(0), ttft(1); half > 1.5*idle {
		t.Errorf("round-robin's TTFT p50 at load 0.5 is %.0f ms, unloaded %.0f ms: the queues should drain", half, idle)
	}
	if idle, over := ttft(0), ttft(2); over < 5*idle {
		t.Errorf("round-robin's TTFT p50 at load 1.5 is %.0f ms, unloaded %.0f ms: the queues should grow", over, idle)
	}
	sat := measured
	for i, r := range res.Loads {
		if r.Load != o.Loads[i] || math.Abs(r.RateFleet-r.Load*sat) > 1e-9 || math.Abs(r.RatePerServer*2-r.RateFleet) > 1e-9 {
			t.Errorf("load %v: rate %v fleet, %v per server; saturation %v", r.Load, r.RateFleet, r.RatePerServer, sat)
		}
		if r.Result.Requests != 200 {
			t.Errorf("load %v ran %d requests, want 200 at every load", r.Load, r.Result.Requests)
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(a), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"saturation", "loads", "summary"} {
		if _, ok := m[k]; !ok || len(m) != 3 {
			t.Fatalf("JSON keys %v, want saturation, loads, summary", m)
		}
	}
	sum := m["summary"].([]any)[2].(map[string]any)
	if b := sum["best_heuristic"].(map[string]any)["ttft_p99_ms"].(map[string]any); b["strategy"] != "rr" {
		t.Errorf("best heuristic on TTFT p99 %v, want rr (the only one run)", b)
	}
	vs := sum["oracle"].(map[string]any)["vs_best"].(map[string]any)
	want := 100 * (res.Loads[2].Result.Strategies["oracle"].TTFTMs.P99/res.Loads[2].Result.Strategies["rr"].TTFTMs.P99 - 1)
	if got := vs["ttft_p99_pct"].(float64); math.Abs(got-want) > 1e-9 {
		t.Errorf("oracle vs rr on TTFT p99 %v%%, want %v%%", got, want)
	}
	if _, ok := sum["predicted_latency"]; ok {
		t.Errorf("predicted-latency did not run but is summarised: %v", sum)
	}
	var text strings.Builder
	res.WriteTable(&text)
	for _, s := range []string{"load 0.50 (", "oracle vs best", "ladder: scenario sharegpt", fmt.Sprintf("--saturation %v", sat)} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("the text lacks %q:\n%s", s, text.String())
		}
	}
	file := filepath.Join(t.TempDir(), "ladder.html")
	if err := res.WriteReport(file); err != nil {
		t.Fatal(err)
	}
	if page, err := os.ReadFile(file); err != nil || !strings.Contains(string(page), "TTFT p99 against load") {
		t.Errorf("report: %v, %.200q", err, page)
	}
}

// A trace keeps its requests and their order at every load; its mean rate is the load's rate.
// The production ladder's high stages run at the load's rate.
func TestRungWorkloads(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	at := time.Date(2023, 11, 16, 18, 0, 0, 0, time.UTC)
	for i := range 50 {
		at = at.Add(time.Duration(100+(i*i*37)%900) * time.Millisecond)
		fmt.Fprintf(&csv, "%s,%d,%d\n", at.Format("2006-01-02 15:04:05.0000000"), 200+i, 20+i)
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	o := RoutingOptions{Scenario: "azure-conv", Trace: path, Servers: 2, Seed: 1}
	base, err := routingWorkload(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []float64{3, 30} {
		w, err := rungWorkload(o, base, rate)
		if err != nil {
			t.Fatal(err)
		}
		n := len(w.Requests)
		if mean := float64(n-1) / (w.Requests[n-1].Arrival - w.Requests[0].Arrival).Seconds(); n != 50 || math.Abs(mean-rate) > 1e-6*rate {
			t.Errorf("%d requests at %v req/s, want 50 at %v", n, mean, rate)
		}
		for i, r := range w.Requests {
			if r.InputTokens != base.Requests[i].InputTokens || (i > 0 && r.Arrival < w.Requests[i-1].Arrival) {
				t.Fatalf("request %d changed or moved: %+v", i, r)
			}
		}
	}
	p := RoutingOptions{Scenario: "production", Servers: 2, Seed: 1, Requests: 300}
	base, err = routingWorkload(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rungWorkload(p, base, 40)
	if err != nil {
		t.Fatal(err)
	}
	peak := 0.0
	for _, s := range w.Stages {
		peak = max(peak, s.Rate)
	}
	if math.Abs(peak-40) > 1e-9 || len(w.Requests) != 300 {
		t.Errorf("production: high stages at %v req/s with %d requests, want 40 with 300", peak, len(w.Requests))
	}
	c := RoutingOptions{Scenario: "C", Servers: 2, Seed: 1, Requests: 100}
	base, err = routingWorkload(c)
	if err != nil {
		t.Fatal(err)
	}
	// A steady Poisson scenario is generated at the rate, as --rate would.
	c.Rate = 5
	want, err := routingWorkload(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Rate = 0
	if w, err = rungWorkload(c, base, 10); err != nil || w.Rate != 10 || w.Requests[50].Arrival != want.Requests[50].Arrival || w.Requests[50].InputTokens != want.Requests[50].InputTokens {
		t.Errorf("C at 10 req/s: %v, rate %v, request 50 at %v, want %v", err, w.Rate, w.Requests[50].Arrival, want.Requests[50].Arrival)
	}
}

// Bad ladder options are refused with a message naming the flag.
func TestLadderOptionErrors(t *testing.T) {
	for _, tt := range []struct {
		o    LadderOptions
		says string
	}{
		{LadderOptions{}, "--load needs at least one load"},
		{LadderOptions{Loads: []float64{0.5, 0}}, "every load must be in (0, 2]"},
		{LadderOptions{Loads: []float64{-0.5}}, "every load must be in (0, 2]"},
		{LadderOptions{Loads: []float64{2.5}}, "every load must be in (0, 2]"},
		{LadderOptions{Loads: []float64{math.NaN()}}, "every load must be in (0, 2]"},
		{LadderOptions{Loads: []float64{0.5}, RoutingOptions: RoutingOptions{Rate: 1}}, "--load and --rate exclude each other"},
		{LadderOptions{Loads: []float64{0.5}, Saturation: -1}, "--saturation must be"},
		{LadderOptions{Loads: []float64{0.5}, Saturation: math.Inf(1)}, "--saturation must be"},
	} {
		if _, err := RunLadder(context.Background(), tt.o); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%+v: %v, want an error saying %q", tt.o, err, tt.says)
		}
	}
	// A given saturation rate skips the measurement.
	o := LadderOptions{RoutingOptions: slotOptions(2), Loads: []float64{0.5}, Saturation: 12}
	o.Strategies, o.Requests = "rr", 50
	res, err := RunLadder(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Saturation; s.Measured || s.FleetRPS != 12 || s.PerServerRPS != 6 || res.Loads[0].RateFleet != 6 {
		t.Errorf("saturation %+v, load rate %v; want 12 req/s given, 6 at load 0.5", s, res.Loads[0].RateFleet)
	}
}

// The steady window's criterion: a run keeps up when completions over the second half of the
// arrivals are at least keptUpShare of them.
func TestKeepsUp(t *testing.T) {
	o := slotOptions(2)
	w, err := routingWorkload(o)
	if err != nil {
		t.Fatal(err)
	}
	fleet, _ := routingFleet(o)
	slots(8, 1)(&fleet)
	sat := saturationOf(t, o, slots(8, 1))
	reqs, _ := copiesFor(fleet, w.Requests)
	for _, tt := range []struct {
		load float64
		want bool
	}{{0.5, true}, {2, false}} {
		got, err := keepsUp(fleet, reqs, tt.load*sat.FleetRPS)
		if err != nil || got != tt.want {
			t.Errorf("at load %v: keeps up %v (%v), want %v", tt.load, got, err, tt.want)
		}
	}
	run, err := cluster.Run(fleet, w.Requests, &roundRobin{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := stats.Summarize(run.Outcomes); s.Requests != len(w.Requests) {
		t.Errorf("round-robin served %d of %d", s.Requests, len(w.Requests))
	}
}
