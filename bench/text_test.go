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
			r := &PipelineResult{Endpoints: 20, Cycles: 500, Concurrency: 2, Stages: 0, P50Us: 812.4, P99Us: 1500.5,
				DecisionsPerS: 2400, FloorP50Us: 90, FloorP99Us: 300, PayloadBytes: 1389, MeanBatch: 1.5}
			return r.WriteText(b)
		}, "pipeline: 500 cycles × 20 endpoints, 0 plugin stages, concurrency 2, payload 1389 B\n" +
			"  decision  p50      812 µs  p99     1500 µs      2400 decisions/s  fallbacks 0  mean batch 1.50\n" +
			"  floor     p50       90 µs  p99      300 µs  (1 sequential no-op round trips per cycle)\n"},
		{"pipeline with CPU figures", func(b *strings.Builder) error {
			r := &PipelineResult{Stages: 7, HostCPUUs: 200, PluginsCPUUs: 333}
			return r.WriteText(b)
		}, "pipeline: 0 cycles × 0 endpoints, 7 plugin stages, concurrency 0, payload 0 B\n" +
			"  decision  p50        0 µs  p99        0 µs         0 decisions/s  fallbacks 0  mean batch 0.00\n" +
			"  cpu       host    200 µs + plugins    333 µs per decision\n" +
			"  floor     p50        0 µs  p99        0 µs  (7 sequential no-op round trips per cycle)\n"},
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
