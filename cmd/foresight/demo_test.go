package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/sim/loadgen"
)

func TestParseProm(t *testing.T) {
	text := `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3
vllm:num_requests_running{model_name="n"} 2
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.25
# TYPE foresight_predictor_mape gauge
foresight_predictor_mape{target="tpot"} 0.05
foresight_predictor_mape{target="ttft"} 0.2 1700000000000
foresight_predictor_model_version 4
# TYPE foresight_predictor_samples_total counter
foresight_predictor_samples_total{result="accepted"} 42
foresight_predictor_samples_total{result="rejected"} 1
weird{label="a b}"} 7
`
	v, err := parseProm(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	sums := []struct {
		name string
		want float64
		ok   bool
	}{
		{"vllm:num_requests_running", 5, true}, // 3 + 2: the series summed
		{"vllm:kv_cache_usage_perc", 0.25, true},
		{"foresight_predictor_mape", 0.25, true}, // 0.05 + 0.2
		{"foresight_predictor_model_version", 4, true},
		{"weird", 7, true}, // a space and a brace inside a label value
		{"foresight_predictor_observe_batches_total", 0, false},
	}
	for _, tt := range sums {
		if got, ok := v.sum(tt.name); ok != tt.ok || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("sum(%s) = %v, %v, want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	series := []struct {
		name, label, value string
		want               float64
		ok                 bool
	}{
		{"foresight_predictor_mape", "target", "ttft", 0.2, true}, // the timestamp is dropped
		{"foresight_predictor_mape", "target", "tpot", 0.05, true},
		{"foresight_predictor_samples_total", "result", "accepted", 42, true},
		{"foresight_predictor_samples_total", "result", "failed", 0, false},
		{"vllm:num_requests_running", "model_name", "n", 2, true},
	}
	for _, tt := range series {
		if got, ok := v.with(tt.name, tt.label, tt.value); ok != tt.ok || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("with(%s, %s=%s) = %v, %v, want %v, %v", tt.name, tt.label, tt.value, got, ok, tt.want, tt.ok)
		}
	}
	if _, err := parseProm(strings.NewReader("not a sample line\n")); err == nil {
		t.Error("a body that is not the text format was read")
	}
}

func TestDemoWorkloadLastsTheDuration(t *testing.T) {
	classes, err := demoClasses(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scenario string
		rate     float64
	}{
		{"sharegpt", 0}, // 2 req/s per server: 8 req/s
		{"A", 0},
		{"sharegpt", 25}, // a rate the first 64 requests would not cover
		{"production", 0},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			o := demoOptions{scenario: tt.scenario, servers: 4, seed: 1, duration: 30 * time.Second, rate: tt.rate}
			w, err := demoWorkload(o, classes)
			if err != nil {
				t.Fatal(err)
			}
			last := w.Requests[len(w.Requests)-1].Arrival
			switch {
			case tt.scenario == "production":
				// The ladder is squeezed into the duration: 8 stages of 30 s / 8, the last one high.
				if last < o.duration*7/8 || last > o.duration {
					t.Errorf("production ladder ends at %v, want within its last stage, (%v, %v]", last, o.duration*7/8, o.duration)
				}
			case last < o.duration:
				t.Errorf("%d requests end at %v, before the %v duration", len(w.Requests), last, o.duration)
			}
			if tt.scenario == "sharegpt" && len(w.Requests) > int(w.Rate*30*1.2)+64 {
				t.Errorf("%d requests for %v at %.1f req/s: more than needed", len(w.Requests), o.duration, w.Rate)
			}
			var batch int
			for _, r := range w.Requests {
				if r.Priority < 0 {
					batch++
				}
			}
			if share := float64(batch) / float64(len(w.Requests)); share < 0.1 || share > 0.3 {
				t.Errorf("batch share %.2f, want about the default 0.2", share)
			}
		})
	}
}

func TestDemoOptionsValidate(t *testing.T) {
	good := demoOptions{scenario: "sharegpt", servers: 4, duration: time.Minute, drain: time.Second}
	tests := []struct {
		name   string
		change func(*demoOptions)
		want   string
	}{
		{"no servers", func(o *demoOptions) { o.servers = 0 }, "--servers"},
		{"no duration", func(o *demoOptions) { o.duration = 0 }, "--duration"},
		{"negative drain", func(o *demoOptions) { o.drain = -time.Second }, "--drain"},
		{"negative rate", func(o *demoOptions) { o.rate = -1 }, "--rate"},
		{"a trace scenario", func(o *demoOptions) { o.scenario = "mooncake" }, "--scenario"},
		{"unknown scenario", func(o *demoOptions) { o.scenario = "nope" }, "--scenario"},
	}
	if err := good.validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	lower := good
	lower.scenario = "c"
	if err := lower.validate(); err != nil {
		t.Errorf("scenario names are case-insensitive: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.change(&o)
			if err := o.validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate = %v, want an error naming %s", err, tt.want)
			}
		})
	}
	if _, err := demoClasses([]string{"x:abc"}); err == nil || !strings.Contains(err.Error(), "--class") {
		t.Errorf("a bad class: %v, want an error naming --class", err)
	}
}

func TestAddObjectives(t *testing.T) {
	cfg := &config.Config{Objectives: []config.Objective{{Name: "interactive", Priority: 5}}}
	added := addObjectives(cfg)
	if len(added) != 1 || !strings.HasPrefix(added[0], "batch") {
		t.Errorf("added %v, want only batch", added)
	}
	if p, _ := cfg.Priority("interactive"); p != 5 {
		t.Errorf("interactive priority %d, want the config's 5 kept", p)
	}
	if p, ok := cfg.Priority("batch"); !ok || p != -1 {
		t.Errorf("batch priority %d (%v), want -1", p, ok)
	}
	if again := addObjectives(cfg); len(again) != 0 {
		t.Errorf("added %v the second time, want nothing", again)
	}
}

// snapshot is a run of 10 requests: 7 ok, 1 shed, 1 5xx, 1 cut.
func snapshot() loadgen.Snapshot {
	var run loadgen.Summary
	run.Ended = 10
	run.ByKind[loadgen.OK], run.ByKind[loadgen.Shed], run.ByKind[loadgen.ServerError], run.ByKind[loadgen.Cut] = 7, 1, 1, 1
	run.TTFT = loadgen.Percentiles{N: 7, P50: 31.5, P95: 120, P99: 140}
	run.TPOT = loadgen.Percentiles{N: 7, P50: 9.5, P95: 10.25, P99: 11}
	run.E2E = loadgen.Percentiles{N: 7, P50: 2000, P95: 9000, P99: 9900}
	run.WithSLO, run.MetSLO = 9, 6
	run.PromptTokens, run.CachedTokens, run.CompletionTokens = 1000, 250, 2100
	return loadgen.Snapshot{Elapsed: 12300 * time.Millisecond, Window: 10 * time.Second, Dispatched: 11, InFlight: 1,
		Run: run, Recent: run, ByObjective: map[string]loadgen.Summary{"interactive": run}}
}

func fleet() fleetState {
	return fleetState{
		endpoints: []endpointLoad{{id: "vllm-0", ok: true, running: 3, waiting: 1, kv: 0.125, picks: 3}, {id: "vllm-1", picks: 1}},
		decisions: 4,
		predictor: predictorState{ok: true, producer: true, version: 2, rows: 150, mapeTTFT: 0.18, mapeTPOT: math.NaN()},
	}
}

func TestRender(t *testing.T) {
	s, f := snapshot(), fleet()
	screen := renderScreen(s, f, 10*time.Second)
	for _, want := range []string{
		"elapsed 12s of 10s (sending done", "sent 11", "in flight 1",
		"vllm-0            3        1  12.5%      75%", // 3 of 4 picks
		"vllm-1            ?        ?      ?      25%", // its scrape failed
		"31.5 / 120 ms", "9.50 / 10.2 ms", "66.7% (6/9)", "7 / 1 / 1", "25.0%",
		"model v2 trained on 150 rows, MAPE TTFT 18%  TPOT - (rolling)",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	line := renderLine(s, f)
	for _, want := range []string{"t=12s", "ok=7", "shed=1", "err=1", "ttft=31.5 / 120 ms", "load(run+wait)=3+1,?", "model=v2", "mape(ttft/tpot)=18%/-"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q: %s", want, line)
		}
	}
	if strings.Contains(line, "\n") {
		t.Errorf("the compact line spans lines: %q", line)
	}
	sum := renderSummary(demoInfo{scenario: "sharegpt", servers: 2, duration: time.Minute}, s, f, 63*time.Second, false)
	for _, want := range []string{
		"sent 11, completed 7, shed 1, errors 1 (4xx 0, 5xx 1, conn 0, stream 0), cut off at the end 1",
		"TTFT ms       p50 31.5  p95 120  p99 140  (7)",
		"SLO attained  66.7% (6/9); interactive 66.7% (6/9), shed 1",
		"25.0% of prompt tokens",
		"171 output tokens/s", // 2100 tokens / 12.3 s
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	if sum := renderSummary(demoInfo{}, s, f, 12*time.Second, true); !strings.Contains(sum, "interrupted after 12s") {
		t.Errorf("an interrupted run's summary does not say so:\n%s", sum)
	}
}

func TestPredictorLine(t *testing.T) {
	tests := []struct {
		name string
		p    predictorState
		want string
	}{
		{"no scrape", predictorState{}, "did not answer"},
		{"no producer", predictorState{ok: true}, "no producer"},
		{"learning", predictorState{ok: true, producer: true, accepted: 42}, "no model yet (42 samples"},
		{"model, no error yet", predictorState{ok: true, producer: true, version: 1, rows: 100, mapeTTFT: math.NaN(), mapeTPOT: math.NaN()},
			"model v1 trained on 100 rows, no prediction error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := predictorLine(tt.p); !strings.Contains(got, tt.want) {
				t.Errorf("predictorLine = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

// TestViewCompactLines checks the non-terminal view: a line at the first update, then one per
// 5 s period, and no escape codes.
func TestViewCompactLines(t *testing.T) {
	var b strings.Builder
	v := newView(&b, false, demoInfo{scenario: "sharegpt", servers: 1})
	v.start()
	s, f := snapshot(), fleet()
	for _, el := range []time.Duration{1, 2, 4, 5, 6, 9, 10, 16} {
		s.Elapsed = el * time.Second
		v.update(s, f)
	}
	out := b.String()
	if got := strings.Count(out, "\nt="); got != 4 { // at 1 s, 5 s, 10 s, 16 s
		t.Errorf("%d status lines, want 4:\n%s", got, out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape codes in a non-terminal view:\n%q", out)
	}
	var tty strings.Builder
	v = newView(&tty, true, demoInfo{})
	v.update(s, f)
	if !strings.HasPrefix(tty.String(), "\x1b[H") || !strings.HasSuffix(tty.String(), "\x1b[J") {
		t.Errorf("a terminal view redraws from home and clears the rest: %q", tty.String()[:min(20, tty.Len())])
	}
}
