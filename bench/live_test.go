package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/workload"
)

// helperEnv makes the test binary a stand-in process for the router-process tests: "ignore-term"
// ignores SIGTERM and waits to be killed; "fail" fails as foresight serve does on a bad flag;
// "cpu-tree" and "burn" are the process tree of TestTreeCPUMeter (cpu_test.go); "emulate" serves
// emulated servers as `foresight emulate` does (live_fleet_test.go).
const helperEnv = "FORESIGHT_BENCH_LIVE_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		select {}
	case "cpu-tree", "burn":
		cpuHelper(os.Getenv(helperEnv))
		os.Exit(0)
	case "emulate":
		emulateHelper(os.Args[1:])
	case "fail":
		fmt.Fprintln(os.Stderr, `foresight: --listen: address "x" is wrong`)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// writeTrace writes an Azure 2023 trace of n rows, step apart, with short prompts (100–400
// tokens) and answers (4–11 tokens), and returns its path.
func writeTrace(t *testing.T, n int, step time.Duration) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	t0 := time.Date(2023, 11, 16, 18, 0, 0, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(&b, "%s,%d,%d\n", t0.Add(time.Duration(i)*step).Format("2006-01-02 15:04:05.0000000"), 100+37*i%300, 4+i%8)
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFor waits (at most 5 s) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually.Wait(t, 5*time.Second, what, cond)
}

func TestLiveWorkloadSpeedupAndCut(t *testing.T) {
	trace := writeTrace(t, 10, 100*time.Millisecond)
	o := LiveOptions{Scenario: "azure-conv", Trace: trace, Servers: 2, Seed: 1, Speedup: 2, MaxDuration: 300 * time.Millisecond}
	w, _, err := liveWorkload(o)
	if err != nil {
		t.Fatal(err)
	}
	// Rows 100 ms apart, twice as fast: 0, 50, …, 450 ms; cut at 300 ms: 0…250 ms, 6 requests.
	if len(w.Requests) != 6 || w.Requests[5].Arrival != 250*time.Millisecond {
		t.Fatalf("%d requests, last at %v; want 6, the last at 250ms", len(w.Requests), w.Requests[len(w.Requests)-1].Arrival)
	}
	// 9 intervals over 0.9 s is 10 req/s, twice as fast 20.
	if w.Rate != 20 {
		t.Errorf("rate %v, want 20", w.Rate)
	}
	o.MaxDuration = time.Nanosecond // only the first arrival, at 0
	if w, _, err = liveWorkload(o); err != nil || len(w.Requests) != 1 {
		t.Errorf("cut at 1ns: %v, %v; want the request at 0", err, w)
	}
}

func TestLiveOptionsAreChecked(t *testing.T) {
	trace := writeTrace(t, 4, 100*time.Millisecond)
	good := LiveOptions{Scenario: "azure-conv", Trace: trace, Servers: 1, Speedup: 1, MaxDuration: time.Minute,
		Configs: "../examples/round-robin.yaml", Binary: "foresight"}
	tests := []struct {
		name string
		edit func(*LiveOptions)
		want string
	}{
		{"servers", func(o *LiveOptions) { o.Servers = 0 }, "--servers"},
		{"speedup", func(o *LiveOptions) { o.Speedup = -2 }, "--speedup"},
		{"rate", func(o *LiveOptions) { o.Rate = -1 }, "--rate"},
		{"class", func(o *LiveOptions) { o.Classes = []string{"chat"} }, "--class"},
		{"baseline", func(o *LiveOptions) { o.Baselines = "random" }, `--baselines "random": want round-robin, least-outstanding or none`},
		{"nothing", func(o *LiveOptions) { o.Configs, o.Baselines = "", "none" }, "nothing to run"},
		{"replicas", func(o *LiveOptions) { o.Replicas = -1 }, "--replicas must be at least 1"},
		{"state", func(o *LiveOptions) { o.Replicas, o.State = 2, "redis" }, `--state "redis": accepted: nats, none`},
		{"no binary", func(o *LiveOptions) { o.Binary = "" }, "binary"},
		{"no config", func(o *LiveOptions) { o.Configs = "missing.yaml" }, "missing.yaml"},
		{"engine cpu", func(o *LiveOptions) { o.EngineCPU = "decode=40" }, `--engine-cpu: cpu cost "decode=40"`},
		{"engine cpu without a binary", func(o *LiveOptions) {
			o.Configs, o.Baselines, o.Binary, o.EngineCPU = "", "round-robin", "", "auto:0.6"
		}, "--engine-cpu: the foresight binary"},
		{"load", func(o *LiveOptions) { o.Load = 2.5 }, "--load must be a fraction"},
		{"load and rate", func(o *LiveOptions) { o.Load, o.Rate = 0.9, 3 }, "give --load or --rate, not both"},
		{"load and speedup", func(o *LiveOptions) { o.Load, o.Speedup = 0.9, 2 }, "leave --speedup at 1"},
		{"saturation", func(o *LiveOptions) { o.Load, o.Saturation = 0.9, -1 }, "--saturation must be"},
		{"saturation alone", func(o *LiveOptions) { o.Saturation = 2 }, "give --load too"},
		{"probe", func(o *LiveOptions) { o.Load, o.Probe = 0.9, -time.Second }, "--probe must be"},
		{"prefill without decode", func(o *LiveOptions) { o.Prefill = 1 }, "at least one prefill and one decode server, 1 in all (--servers), got 1 and 0"},
		{"split without a P/D fleet", func(o *LiveOptions) { o.Split = "always" }, "--split and --kill-prefill need a disaggregated fleet"},
		{"kill with engine cpu", func(o *LiveOptions) {
			o.Servers, o.Prefill, o.Decode, o.KillPrefill, o.EngineCPU = 2, 1, 1, time.Second, "auto:0.5"
		}, "--kill-prefill stops one server of the bench's own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.edit(&o)
			_, err := RunLive(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("RunLive = %v, want an error about %s", err, tt.want)
			}
		})
	}
}

// The objective header goes only to routers that declare the workload's objectives.
func TestLiveRunsObjectives(t *testing.T) {
	rr, err := os.ReadFile("../examples/round-robin.yaml") // declares no objectives
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain, withObjectives := filepath.Join(dir, "plain.yaml"), filepath.Join(dir, "objectives.yaml")
	if err := os.WriteFile(plain, rr, 0o644); err != nil {
		t.Fatal(err)
	}
	objectives := append(slices.Clip(rr), "objectives:\n  - {name: interactive, priority: 1}\n  - {name: batch, priority: -1}\n"...)
	if err := os.WriteFile(withObjectives, objectives, 0o644); err != nil {
		t.Fatal(err)
	}
	w := &workload.Workload{Requests: []workload.Request{{Priority: 0}, {Priority: 1}}}
	specs, err := liveRuns(LiveOptions{Configs: plain + ", " + withObjectives + ",", Binary: "x",
		Baselines: "least-outstanding,none"}, w)
	if err != nil {
		t.Fatal(err)
	}
	want := []liveRunSpec{
		{name: "plain.yaml", config: plain},
		{name: "objectives.yaml", config: withObjectives, objectives: true}, // interactive (priority ≥ 0)
		{name: "client:least-outstanding", baseline: "least-outstanding"},
	}
	if fmt.Sprint(specs) != fmt.Sprint(want) {
		t.Errorf("runs %+v, want %+v", specs, want)
	}
}

func TestLiveSummarize(t *testing.T) {
	chat := workload.Class{Name: "chat", Weight: 1, SLO: workload.SLO{TTFTMs: 100}, Streaming: true}
	bulk := workload.Class{Name: "bulk", Weight: 1, Priority: -1, Streaming: true}
	w := &workload.Workload{Requests: []workload.Request{
		{ID: 0, Arrival: 0, SLO: chat.SLO, Streaming: true, Class: "chat"},
		{ID: 1, Arrival: 10 * time.Millisecond, SLO: chat.SLO, Streaming: true, Class: "chat"},
		{ID: 2, Arrival: 20 * time.Millisecond, Priority: -1, Streaming: true, Class: "bulk"},
		{ID: 3, Arrival: 30 * time.Millisecond, SLO: chat.SLO, Streaming: true, Class: "chat"},
	}}
	ms := time.Millisecond
	results := []loadgen.Result{ // in the order they ended, not by ID
		{ID: 2, Target: 1, Kind: loadgen.OK, Sent: 22 * ms, TTFT: 500 * ms, E2E: 600 * ms},
		{ID: 0, Target: 0, Kind: loadgen.OK, Sent: 1 * ms, SLO: chat.SLO, TTFT: 50 * ms, E2E: 90 * ms},
		{ID: 1, Target: 1, Kind: loadgen.OK, Sent: 10 * ms, SLO: chat.SLO, TTFT: 150 * ms, E2E: 200 * ms},
		{ID: 3, Target: 1, Kind: loadgen.Cut, Sent: 34 * ms, SLO: chat.SLO},
	}
	var r LiveRun
	r.summarize(loadgen.Snapshot{Dispatched: 4}, results, w, []workload.Class{chat, bulk})
	// chat: 3 sent; 0 met (50 ≤ 100), 1 missed (150 > 100), 3 cut and left out: 1 of 2.
	// bulk: 1 sent, no objective.
	if len(r.ByClass) != 2 || r.ByClass[0].Name != "bulk" || r.ByClass[1].Name != "chat" {
		t.Fatalf("by class %+v, want bulk then chat", r.ByClass)
	}
	if c := r.ByClass[1]; c.Sent != 3 || c.WithSLO != 2 || c.Met != 1 || *c.Attainment != 0.5 || c.TTFTMs.P50 != 100 || c.Shed != 0 {
		t.Errorf("chat %+v, want 3 sent, 1 met of 2, TTFT p50 100 ms (of 50 and 150)", c)
	}
	if c := r.ByClass[0]; c.Sent != 1 || c.WithSLO != 0 || c.Attainment != nil {
		t.Errorf("bulk %+v, want 1 sent and no attainment", c)
	}
	// Send lags 1, 0, 2, 4 ms: sorted 0 1 2 4, p50 = 1.5.
	if r.SendLagMs.P50 != 1.5 || r.SendLagMs.P99 < 3.9 {
		t.Errorf("send lag %+v, want p50 1.5 and p99 near 4", r.SendLagMs)
	}
	// The fingerprint is of the arrivals sent, whatever order the results came in.
	var again LiveRun
	again.summarize(loadgen.Snapshot{}, []loadgen.Result{results[3], results[1], results[0], results[2]}, w, nil)
	if r.Arrivals != again.Arrivals || r.Arrivals == "" {
		t.Errorf("fingerprints %q and %q of the same arrivals differ", r.Arrivals, again.Arrivals)
	}
	var fewer LiveRun
	fewer.summarize(loadgen.Snapshot{}, results[:3], w, nil)
	if fewer.Arrivals == r.Arrivals {
		t.Errorf("3 arrivals have the fingerprint of 4")
	}
	if len(r.outcomes) != 4 || !r.outcomes[3].Shed || r.outcomes[0].Shed {
		t.Errorf("outcomes %+v: want 4, the cut one not served", r.outcomes)
	}

	addrs := []string{"127.0.0.1:1", "127.0.0.1:2"}
	tests := []struct {
		name     string
		fig      routerFigures
		requests []int
		shares   []float64
	}{
		// the client's own count by target: 0 once, 1 three times
		{"client", routerFigures{}, []int{1, 3}, []float64{0.25, 0.75}},
		// the router's counter, by endpoint id; an endpoint not in the fleet is not a server
		{"router", routerFigures{dispatched: map[string]float64{"127.0.0.1:1": 3, "127.0.0.1:2": 2, "other": 9}}, []int{3, 2}, []float64{0.6, 0.4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var run LiveRun
			run.servers(addrs, results, tt.fig, nil, []float64{4, 0}, []float64{0.5, 0})
			for i, s := range run.ServerStats {
				if s.Requests != tt.requests[i] || s.Share != tt.shares[i] || s.Addr != addrs[i] {
					t.Errorf("server %d: %+v, want %d requests, share %v", i, s, tt.requests[i], tt.shares[i])
				}
			}
			if run.ServerStats[0].MaxWaiting != 4 || run.ServerStats[0].MeanWaiting != 0.5 {
				t.Errorf("server 0's queue %+v, want max 4, mean 0.5", run.ServerStats[0])
			}
		})
	}
}

func TestReadRouterMetrics(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# TYPE foresight_endpoint_requests_total counter
foresight_endpoint_requests_total{endpoint="127.0.0.1:8000"} 12
foresight_endpoint_requests_total{endpoint="127.0.0.1:8001"} 9
# TYPE foresight_predictor_mape gauge
foresight_predictor_mape{target="ttft"} 0.051
foresight_predictor_mape{target="tpot"} 0.004
# TYPE foresight_stage_fallbacks_total counter
foresight_stage_fallbacks_total{profile="default",stage="producer",reason="timeout"} 3
foresight_stage_fallbacks_total{profile="default",stage="filter",reason="timeout"} 2
foresight_stage_fallbacks_total{profile="default",stage="scorer",reason="unavailable"} 1
# TYPE foresight_endpoint_slots gauge
foresight_endpoint_slots{endpoint="127.0.0.1:8000"} 32
foresight_endpoint_slots{endpoint="127.0.0.1:8001"} 0
# TYPE foresight_decision_wait_seconds histogram
foresight_decision_wait_seconds_bucket{le="0.001"} 50
foresight_decision_wait_seconds_bucket{le="0.002"} 98
foresight_decision_wait_seconds_bucket{le="0.004"} 100
foresight_decision_wait_seconds_bucket{le="+Inf"} 100
foresight_decision_wait_seconds_sum 0.08
foresight_decision_wait_seconds_count 100
# TYPE foresight_stage_duration_seconds histogram
foresight_stage_duration_seconds_bucket{plugin="picker",profile="a",stage="picker",le="0.001"} 3
foresight_stage_duration_seconds_bucket{plugin="picker",profile="a",stage="picker",le="+Inf"} 4
foresight_stage_duration_seconds_sum{plugin="picker",profile="a",stage="picker"} 0.005
foresight_stage_duration_seconds_count{plugin="picker",profile="a",stage="picker"} 4
foresight_stage_duration_seconds_bucket{plugin="picker",profile="b",stage="picker",le="0.001"} 1
foresight_stage_duration_seconds_bucket{plugin="picker",profile="b",stage="picker",le="+Inf"} 1
foresight_stage_duration_seconds_sum{plugin="picker",profile="b",stage="picker"} 0.001
foresight_stage_duration_seconds_count{plugin="picker",profile="b",stage="picker"} 1
`)
	}))
	defer ts.Close()
	fig, err := readRouter(context.Background(), ts.Client(), strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if fig.dispatched["127.0.0.1:8000"] != 12 || fig.dispatched["127.0.0.1:8001"] != 9 || len(fig.dispatched) != 2 {
		t.Errorf("dispatched %v", fig.dispatched)
	}
	if fig.mape["ttft"] != 0.051 || fig.mape["tpot"] != 0.004 {
		t.Errorf("mape %v", fig.mape)
	}
	if got := fallbackCounts(fig.fallbacks); got != "timeout 5, unavailable 1" {
		t.Errorf("stage fallbacks %q (%v), want timeout 5, unavailable 1", got, fig.fallbacks)
	}
	// 100 waits: the 50th is the end of the first bucket, the 99th half way into (2 ms, 4 ms].
	if w := fig.decisionWait; w == nil || w.Requests != 100 || math.Abs(w.P50Ms-1) > 1e-9 || math.Abs(w.P99Ms-3) > 1e-9 {
		t.Errorf("decision wait %+v, want 100 requests, p50 1 ms, p99 3 ms", w)
	}
	// The picker's calls over both profiles: 5 calls, 6 ms in all, the p99 beyond the 1 ms bucket.
	if got := roundTrips(fig.stages); got != "picker 1.20/1.00" {
		t.Errorf("round trips %q (%+v), want picker 1.20/1.00", got, fig.stages)
	}
	if got := fallbackCounts(nil); got != "none" {
		t.Errorf("no stage fallbacks read %q, want none", got)
	}
	var run LiveRun
	run.servers([]string{"127.0.0.1:8000", "127.0.0.1:8001"}, nil, fig, nil, []float64{0, 0}, []float64{0, 0})
	if run.ServerStats[0].Slots != 32 || run.ServerStats[1].Slots != 0 || learnedSlots(run.ServerStats) != "; learned slots 32/0" {
		t.Errorf("servers %+v (%q), want 32 slots learned for the first", run.ServerStats, learnedSlots(run.ServerStats))
	}
}

// The poller keeps each server's largest and mean waiting queue over its samples.
func TestQueuePoller(t *testing.T) {
	values := []int{3, 7, 1}
	var served atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := served.Add(1)
		v := values[min(int(n)-1, len(values)-1)] // then 1 for ever
		fmt.Fprintf(w, "vllm:num_requests_waiting{model_name=\"m\"} %d\n", v)
	}))
	defer ts.Close()
	// The period is also each scrape's timeout: long enough for a loaded machine (-race, CI) to
	// answer, so no served value is lost to a timeout.
	q := pollQueues([]string{strings.TrimPrefix(ts.URL, "http://"), "127.0.0.1:1"}, 50*time.Millisecond)
	waitFor(t, "three samples", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.samples[0] >= 3
	})
	maxW, mean := q.stop()
	// Samples 3, 7, 1, 1, …: max 7, mean between 1 and 11/3.
	if maxW[0] != 7 || mean[0] <= 1 || mean[0] > 11.0/3 {
		t.Errorf("max %v, mean %v; want 7 and a mean in (1, 3.67]", maxW[0], mean[0])
	}
	if maxW[1] != 0 || mean[1] != 0 { // nobody listening: no sample
		t.Errorf("unreachable server: max %v, mean %v; want 0", maxW[1], mean[1])
	}
}

// A router that ignores SIGTERM is killed after the grace, with its process group.
func TestRouterStopEscalates(t *testing.T) {
	t.Setenv(helperEnv, "ignore-term")
	p, err := spawn(os.Args[0], "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the helper to ignore SIGTERM", func() bool { return strings.Contains(p.out.String(), "ignoring") })
	began := time.Now()
	p.Stop(200 * time.Millisecond)
	if el := time.Since(began); el < 200*time.Millisecond {
		t.Errorf("stopped after %v, before the grace", el)
	}
	if err := syscall.Kill(p.pid, 0); err == nil {
		t.Errorf("process %d still exists", p.pid)
	}
	p.Stop(time.Second) // again: a no-op
}

// A router that does not start is reported unavailable with its error, and the bench goes on to
// the baselines, which send the same arrivals and spread them over the servers.
func TestRunLiveRouterUnavailable(t *testing.T) {
	t.Setenv(helperEnv, "fail")
	trace := writeTrace(t, 24, 20*time.Millisecond)
	var stops int
	res, err := RunLive(context.Background(), LiveOptions{Configs: "../examples/round-robin.yaml", Binary: os.Args[0],
		Baselines: "round-robin,least-outstanding", Scenario: "azure-conv", Trace: trace, Servers: 2, Seed: 1, Speedup: 2,
		AtExit: func(func()) { stops++ }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 3 || !strings.Contains(res.Runs[0].Unavailable, `--listen: address "x" is wrong`) {
		t.Fatalf("runs %+v: want the router's failure first", res.Runs)
	}
	for _, run := range res.Runs[1:] {
		if run.Sent != 24 || run.OK != 24 || run.Dispatches != 24 || run.Arrivals != res.Runs[2].Arrivals {
			t.Errorf("%s: %d sent, %d ok, %d dispatched, arrivals %s; want 24 of the same arrivals", run.Name, run.Sent, run.OK,
				run.Dispatches, run.Arrivals)
		}
		if run.RouterCPUSeconds != nil {
			t.Errorf("%s: a router CPU time without a router", run.Name)
		}
	}
	// Round-robin over 2 servers: 12 each.
	if s := res.Runs[1].ServerStats; s[0].Requests != 12 || s[1].Requests != 12 {
		t.Errorf("client round-robin: %+v, want 12 and 12", s)
	}
	if stops < 3 { // a fleet per run
		t.Errorf("%d stop functions registered, want one per fleet at least", stops)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil || !strings.Contains(b.String(), "round-robin.yaml: unavailable") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
	file := filepath.Join(t.TempDir(), "live.html")
	if err := res.WriteReport(file); err != nil {
		t.Fatal(err)
	}
	if page, err := os.ReadFile(file); err != nil || !strings.Contains(string(page), "client:least-outstanding") {
		t.Errorf("report: %v", err)
	}
}

// The configs of examples/priorities declare one objective per class of a critical/standard/
// sheddable workload: each request then sends its class as its objective. A workload with a
// class they do not declare falls back to interactive and batch, which they do not declare
// either: no objective is sent.
func TestLiveRunsClassObjectives(t *testing.T) {
	// The built-in stages only: a clean checkout has no plugin binaries when this test runs.
	configs := "../examples/priorities/load-prefix-322.yaml,../examples/priorities/load-prefix-322-fc.yaml"
	classes := &workload.Workload{Requests: []workload.Request{{Class: "critical", Priority: 1}, {Class: "standard"}, {Class: "sheddable", Priority: -1}}}
	specs, err := liveRuns(LiveOptions{Configs: configs, Binary: "x", Baselines: "none"}, classes)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if !s.objectives || !s.classObjectives {
			t.Errorf("%s: objectives %t, class objectives %t; want both", s.name, s.objectives, s.classObjectives)
		}
	}
	other := &workload.Workload{Requests: []workload.Request{{Class: "critical", Priority: 1}, {Class: "bulk", Priority: -1}}}
	if specs, err = liveRuns(LiveOptions{Configs: configs, Binary: "x", Baselines: "none"}, other); err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.objectives || s.classObjectives {
			t.Errorf("%s with an undeclared class: objectives %t, class objectives %t; want neither", s.name, s.objectives, s.classObjectives)
		}
	}
}

// A run's flow control figures come from the router's counters: held are the requests dispatched
// from the queue or that left it at their TTL or with their client; refused at the door, they
// never waited.
func TestLiveFlowFigures(t *testing.T) {
	r := LiveRun{Sent: 200}
	r.flow(routerFigures{flowDispatched: 30, flowShed: map[string]float64{"ttl-expired": 6, "client-gone": 4, "band-full": 5, "too-large": 0}})
	if r.FlowHeld != 40 || r.FlowHeldShare != 0.2 || len(r.FlowShed) != 3 || r.FlowShed["band-full"] != 5 {
		t.Errorf("held %d (%v), shed %v; want 40 (0.2) and three reasons", r.FlowHeld, r.FlowHeldShare, r.FlowShed)
	}
	var none LiveRun
	none.flow(routerFigures{})
	if none.FlowHeld != 0 || none.FlowShed != nil {
		t.Errorf("without flow control: %d held, shed %v", none.FlowHeld, none.FlowShed)
	}
}
