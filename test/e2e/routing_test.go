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

// TestRoutingBenchReplicasShareWhatTheyLearn runs the routing bench behind two router replicas:
// every request is routed, and the first replica's producer trains on more rows when the
// replicas share their samples (the producer's shareDir) than when each learns alone from its
// half of the traffic.
func TestRoutingBenchReplicasShareWhatTheyLearn(t *testing.T) {
	rows := map[bool]uint64{}
	for _, alone := range []bool{false, true} {
		args := []string{"bench", "routing", "--scenario", "C", "--servers", "2", "--requests", "600",
			"--strategies", "predicted-latency", "--seed", "3", "--examples", "examples", "--replicas", "2", "--json"}
		if alone {
			args = append(args, "--alone")
		}
		stdout, stderr, code := foresight(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var res struct {
			Replicas   int `json:"replicas"`
			Strategies map[string]struct {
				Requests  int `json:"requests"`
				Predictor *struct {
					TrainingRows uint64 `json:"training_rows"`
				} `json:"predictor"`
			} `json:"strategies"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		pl := res.Strategies["predicted-latency"]
		if res.Replicas != 2 || pl.Requests != 600 || pl.Predictor == nil || pl.Predictor.TrainingRows == 0 {
			t.Fatalf("alone=%v: replicas %d, %+v (predictor %+v)", alone, res.Replicas, pl, pl.Predictor)
		}
		rows[alone] = pl.Predictor.TrainingRows
	}
	if rows[false] <= rows[true] {
		t.Errorf("the first replica's model trained on %d rows sharing, %d alone: want more when sharing", rows[false], rows[true])
	}
}
