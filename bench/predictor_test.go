package bench

import (
	"testing"

	"github.com/foresight-router/foresight/plugins/producer/predictor"
)

func TestBenchPredictorSmall(t *testing.T) {
	o := PredictorOptions{Scenario: "sharegpt", Preset: "llama-3.1-8b-h100-tp2", Servers: 2, Rows: 400, Endpoints: 10,
		Cycles: 20, Noise: 0.05, Seed: 2}
	res, err := RunPredictor(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.TrainRows != 400 || res.HeldOut < 100 || res.TrainMs <= 0 || res.PredictUsP50 <= 0 || res.Trees != predictor.DefaultParams().Model.Trees {
		t.Errorf("result %+v", res)
	}
	for name, v := range map[string]float64{"ttft_mape": res.TTFTMAPE, "tpot_mape": res.TPOTMAPE, "oracle": res.OracleTTFTMAPE} {
		if !(v > 0 && v < 1) {
			t.Errorf("%s = %v, want a fraction", name, v)
		}
	}
	if res.TTFTP90Cover < 0.6 || res.TTFTP90Cover > 1 {
		t.Errorf("p90 coverage %v", res.TTFTP90Cover)
	}
	if _, err := RunPredictor(PredictorOptions{Rows: 10}); err == nil {
		t.Error("10 rows were accepted")
	}
}
