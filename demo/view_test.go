package demo

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/loadgen"
)

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
	run.Failures = []loadgen.Failure{{Kind: loadgen.ServerError, Example: "no endpoint is ready: vllm-0 is down", Count: 1}}
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
		"errors, why:\n  1 × 5xx: no endpoint is ready: vllm-0 is down\n",
		"model v2 trained on 150 rows, MAPE TTFT 18%  TPOT - (rolling)", clientAttainmentNote,
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	line := renderLine(s, f)
	for _, want := range []string{"t=12s", "ok=7", "shed=1", "err=1", "ttft=31.5/120ms", "slo*=66.7%(6/9)", "load(run+wait)=3+1,?", "model=v2", "mape(ttft/tpot)=18%/-"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q: %s", want, line)
		}
	}
	sum := renderSummary(runInfo{scenario: "sharegpt", servers: 2, duration: time.Minute}, s, f, 63*time.Second, false)
	for _, want := range []string{
		"sent 11, completed 7, shed 1, errors 1, cut off at the end 1",
		"  errors, why   (count × kind: the first one's message)\n                1 × 5xx: no endpoint is ready: vllm-0 is down\n",
		"TTFT ms       p50 31.5  p95 120  p99 140  (7)",
		"SLO attained* 66.7% (6/9); interactive 66.7% (6/9), shed 1",
		"25.0% of prompt tokens",
		"171 output tokens/s", // 2100 tokens / 12.3 s
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	if sum := renderSummary(runInfo{}, s, f, 12*time.Second, true); !strings.Contains(sum, "interrupted after 12s") {
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
	v := newView(&b, false, runInfo{scenario: "sharegpt", servers: 1})
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
	v = newView(&tty, true, runInfo{})
	v.update(s, f)
	if !strings.HasPrefix(tty.String(), "\x1b[H") || !strings.HasSuffix(tty.String(), "\x1b[J") {
		t.Errorf("a terminal view redraws from home and clears the rest: %q", tty.String()[:min(20, tty.Len())])
	}
}

// TestLinesFitTheWidth checks that no line of the view is wider than lineWidth, with an experiment,
// a long error message and a large fleet.
func TestLinesFitTheWidth(t *testing.T) {
	s, f := snapshot(), fleet()
	s.Run.Failures = append(s.Run.Failures, loadgen.Failure{Kind: loadgen.ClientError, Count: 27,
		Example: "adding request 812: 9000 input + 1200 output tokens exceed max_model_len 8192 " + strings.Repeat("and more ", 20)})
	f.experiment = abReport()
	for i := range 16 {
		f.endpoints = append(f.endpoints, endpointLoad{id: "vllm-" + strconv.Itoa(i+2), ok: true, running: 31, waiting: 12})
	}
	in := runInfo{scenario: "production", servers: 18, preset: "sim-8b-h100-32slots", rate: 16, duration: time.Minute,
		api: "127.0.0.1:40001", admin: "127.0.0.1:40002", config: "examples/demo-ab.yaml"}
	for name, text := range map[string]string{
		"header": header(in), "screen": renderScreen(s, f, time.Minute), "lines": renderLine(s, f),
		"summary": renderSummary(in, s, f, time.Minute, false),
	} {
		for l := range strings.SplitSeq(text, "\n") {
			if n := len([]rune(l)); n > lineWidth {
				t.Errorf("%s: a line of %d columns: %q", name, n, l)
			}
		}
	}
	if l := renderLine(s, f); !strings.Contains(l, "load(run+wait)=4..43 over 18 (1 unknown)") {
		t.Errorf("a fleet of 18 endpoints is not given as a range: %s", l)
	}
}
