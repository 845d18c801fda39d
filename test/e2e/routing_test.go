package e2e

import (
	"encoding/json"
	"testing"
)

// TestRoutingBenchLearnsWithTheProducer runs the routing bench's predicted-latency strategy —
// examples/pipeline.yaml with every plugin process, the producer learning from the simulated
// requests through batched Observe calls — and checks that predictions were made and scored.
func TestRoutingBenchLearnsWithTheProducer(t *testing.T) {
	stdout, stderr, code := foresight(t, "bench", "routing", "--scenario", "C", "--servers", "2", "--requests", "400",
		"--strategies", "predicted-latency,load-prefix-322", "--seed", "3", "--examples", "examples", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Strategies map[string]struct {
			Requests       int                 `json:"requests"`
			PredictionMAPE map[string]*float64 `json:"prediction_mape"`
			Predictor      *struct {
				ModelVersion uint64 `json:"model_version"`
				TTFT         struct {
					Samples uint64  `json:"samples"`
					MAPE    float64 `json:"mape"`
				} `json:"ttft"`
			} `json:"predictor"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	pl := res.Strategies["predicted-latency"]
	if pl.Requests != 400 || pl.Predictor == nil || pl.Predictor.ModelVersion == 0 || pl.Predictor.TTFT.Samples == 0 {
		t.Fatalf("predicted-latency: %+v (predictor %+v)", pl, pl.Predictor)
	}
	if m := pl.PredictionMAPE["ttft"]; m == nil || *m <= 0 || *m > 1 {
		t.Errorf("TTFT prediction MAPE %v, want a fraction from the predictions made at dispatch", m)
	}
	if lp := res.Strategies["load-prefix-322"]; lp.Predictor != nil || lp.PredictionMAPE["ttft"] != nil {
		t.Errorf("load-prefix-322 has no producer but reports %+v", lp)
	}
}
