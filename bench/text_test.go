package bench

import (
	"strings"
	"testing"
)

// TestWriteText pins the text the commands print for results without a run behind them.
func TestWriteText(t *testing.T) {
	tests := []struct {
		name  string
		write func(*strings.Builder) error
		want  string
	}{
		{"pipeline without CPU figures", func(b *strings.Builder) error {
			r := &PipelineResult{Mode: "cohorts", Endpoints: 20, Cycles: 500, Concurrency: 2, Stages: 0, P50Us: 812.4, P99Us: 1500.5,
				DecisionsPerS: 2400, FloorP50Us: 90, FloorP99Us: 300, PayloadBytes: 1389, MeanBatch: 1.5}
			return r.WriteText(b)
		}, "pipeline: 500 cycles × 20 endpoints, 0 plugin stages, cohorts of Run calls, concurrency 2, payload 1389 B\n" +
			"  decision  p50      812 µs  p99     1500 µs      2400 decisions/s  fallbacks 0  mean batch 1.50\n" +
			"  floor     p50       90 µs  p99      300 µs         0 cycles/s  (1 sequential no-op round trips per cycle)\n"},
		{"pipeline with CPU figures", func(b *strings.Builder) error {
			r := &PipelineResult{Mode: "cohorts", Stages: 7, HostCPUUs: 200, PluginsCPUUs: 333}
			return r.WriteText(b)
		}, "pipeline: 0 cycles × 0 endpoints, 7 plugin stages, cohorts of Run calls, concurrency 0, payload 0 B\n" +
			"  decision  p50        0 µs  p99        0 µs         0 decisions/s  fallbacks 0  mean batch 0.00\n" +
			"  cpu       host    200 µs + plugins    333 µs per decision\n" +
			"  floor     p50        0 µs  p99        0 µs         0 cycles/s  (7 sequential no-op round trips per cycle)\n"},
		// In rounds: the round's size and the clients waiting, the share accounted, the floor's
		// batch calls, and the ratios to the floor: p50 11960 / 6500 = 1.84, rate 635 / 1270 = 0.50.
		{"pipeline in rounds", func(b *strings.Builder) error {
			accounted := 0.998
			r := &PipelineResult{Mode: "rounds", Endpoints: 100, Cycles: 20000, Concurrency: 8, Round: 200, InFlight: 2, Rounds: 2500, MeanRound: 8,
				Accounted: &accounted, Stages: 7, P50Us: 11960, P99Us: 26793, DecisionsPerS: 635, FloorP50Us: 6500, FloorP99Us: 14775,
				FloorPerS: 1270, PayloadBytes: 7341, MeanBatch: 8, Fallbacks: 40}
			return r.WriteText(b)
		}, "pipeline: 20000 cycles × 100 endpoints, 7 plugin stages, rounds of up to 200, 2 under way at most, 8 requests waiting (mean round 8.00), payload 7341 B\n" +
			"  decision  p50    11960 µs  p99    26793 µs       635 decisions/s  fallbacks 40  mean batch 8.00\n" +
			"  rounds    2500; 99.8 % of the picks accounted for their round's earlier members\n" +
			"  floor     p50     6500 µs  p99    14775 µs      1270 cycles/s  (7 sequential no-op batch calls per round, its cycles in each)\n" +
			"  vs floor  p50 1.84×  decisions/s 0.50×\n"},
		{"proxy, lines in the order of --streams", func(b *strings.Builder) error {
			r := &ProxyResult{Config: "x.yaml", Servers: 2, PromptTokens: 3.25, streams: "4, 1",
				DirectUs: map[string]Percentiles{"c1": {100, 200}, "c4": {300, 400}}, RoutedUs: map[string]Percentiles{"c1": {150, 260}, "c4": {330, 480}},
				AddedTTFTUs: map[string]Percentiles{"c1": {50, 60}, "c4": {30, 80}}, Errors: map[string]int64{"c4": 1}, MaxRPS: 1234.4,
				RouterCPUMsPerRequest: map[string]float64{"c1": 2.5, "c4": 1.25, "rps": 0.125}}
			return r.WriteText(b)
		}, "x.yaml on 2 emulated servers, prompts of 3 tokens on average\n" +
			"    4 streams: TTFT direct p50 300 p99 400 µs, routed p50 330 p99 480 µs, added p50 30 p99 80 µs, errors 1\n" +
			"    1 streams: TTFT direct p50 100 p99 200 µs, routed p50 150 p99 260 µs, added p50 50 p99 60 µs, errors 0\n" +
			"router CPU per routed request (ms): 4 streams 1.250, 1 streams 2.500, max-rate phase 0.125\n" +
			"max rate: 1234 requests/s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}
