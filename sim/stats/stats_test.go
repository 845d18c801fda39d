package stats

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	out := []Outcome{
		// Served within both objectives: TTFT 100 ≤ 200, TPOT 10 ≤ 20.
		{Arrival: 0, TTFT: 100 * ms, E2E: 1100 * ms, TPOTMs: 10, OutputTokens: 101, SLO: sdk.SLO{TTFTMs: 200, TPOTMs: 20},
			Predicted: sdk.Prediction{Valid: true, TTFTMs: 110, TPOTMs: 8}}, // errors 10%, 20%
		// Served, misses its TTFT objective (300 > 200).
		{Arrival: 500 * ms, TTFT: 300 * ms, E2E: 1300 * ms, TPOTMs: 10, OutputTokens: 101, SLO: sdk.SLO{TTFTMs: 200},
			Predicted: sdk.Prediction{Valid: true, TTFTMs: 270, TPOTMs: 10}}, // errors 10%, 0%
		// Served without objectives and without a prediction; one token, so no TPOT.
		{Arrival: 1000 * ms, TTFT: 200 * ms, E2E: 200 * ms, OutputTokens: 1},
		// Shed, with an objective: counts as a miss.
		{Arrival: 1500 * ms, Shed: true, SLO: sdk.SLO{TTFTMs: 200}},
	}
	s := Summarize(out)
	// Span: first arrival 0, last completion max(1100, 1800, 1200) = 1800 ms.
	// Tokens 101 + 101 + 1 = 203 → 203 / 1.8 s; good requests: the first and the third → 2 / 1.8 s.
	checks := []struct {
		name      string
		got, want float64
	}{
		{"ttft p50", s.TTFTMs.P50, 200}, // 100, 200, 300
		{"e2e p50", s.E2EMs.P50, 1100},  // 200, 1100, 1300
		{"tpot p50", s.TPOTMs.P50, 10},  // 10, 10
		{"throughput", s.ThroughputTokS, 203 / 1.8},
		{"goodput", s.GoodputRPS, 2 / 1.8},
		{"shed rate", s.ShedRate, 0.25},
		{"slo attainment", *s.SLOAttainment, 1.0 / 3}, // three with objectives, one met
		{"ttft mape", *s.PredictionMAPE.TTFT, 0.10},   // (0.10 + 0.10) / 2
		{"tpot mape", *s.PredictionMAPE.TPOT, 0.10},   // (0.20 + 0) / 2
		// Geometric means of predicted / actual: √(1.1 × 0.9) and √(0.8 × 1).
		{"ttft bias", *s.PredictionBias.TTFT, math.Sqrt(1.1 * 0.9)},
		{"tpot bias", *s.PredictionBias.TPOT, math.Sqrt(0.8)},
	}
	for _, c := range checks {
		if diff := c.got - c.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestSummaryJSONHasNullsWhereNothingWasMeasured(t *testing.T) {
	s := Summarize([]Outcome{{TTFT: time.Millisecond, E2E: time.Millisecond, OutputTokens: 1}})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["slo_attainment"] != nil {
		t.Errorf("slo_attainment = %v, want null without objectives", m["slo_attainment"])
	}
	mape := m["prediction_mape"].(map[string]any)
	if mape["ttft"] != nil || mape["tpot"] != nil {
		t.Errorf("prediction_mape = %v, want nulls without predictions", mape)
	}
	for _, k := range []string{"ttft_ms", "tpot_ms", "e2e_ms", "throughput_tok_s", "goodput_rps", "shed_rate"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary JSON lacks %q", k)
		}
	}
}
