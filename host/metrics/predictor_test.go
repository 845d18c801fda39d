package metrics

import (
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPredictorBeforeAnyStats(t *testing.T) {
	c := NewPredictor(func() feedback.Counts { return feedback.Counts{Sent: 10, Accepted: 7, Failed: 3, Batches: 2} })
	want := `
# HELP foresight_predictor_observe_batches_total Observe calls made to the producer.
# TYPE foresight_predictor_observe_batches_total counter
foresight_predictor_observe_batches_total 2
# HELP foresight_predictor_samples_total Finished-request samples sent to the producer's Observe, by result: accepted, rejected (nothing to learn), failed (the call failed).
# TYPE foresight_predictor_samples_total counter
foresight_predictor_samples_total{result="accepted"} 7
foresight_predictor_samples_total{result="failed"} 3
foresight_predictor_samples_total{result="rejected"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestPredictorReportsTheProducersStats(t *testing.T) {
	cover := 0.88
	counts := feedback.Counts{Sent: 500, Accepted: 500, Batches: 4, Stats: &sdk.PredictorStats{
		ModelVersion: 7, TrainingRows: 4200, Drift: true,
		TTFT: sdk.TargetStats{Samples: 500, MAPE: 0.051, MAE: 3.5, QuantileCoverage: &cover},
		TPOT: sdk.TargetStats{Samples: 0},
	}}
	c := NewPredictor(func() feedback.Counts { return counts })
	want := `
# HELP foresight_predictor_drift 1 while the producer's drift guard marks its predictions invalid, else 0.
# TYPE foresight_predictor_drift gauge
foresight_predictor_drift 1
# HELP foresight_predictor_mae_ms Rolling mean absolute error of the producer's predictions, in milliseconds.
# TYPE foresight_predictor_mae_ms gauge
foresight_predictor_mae_ms{target="ttft"} 3.5
# HELP foresight_predictor_mape Rolling mean absolute percentage error of the producer's predictions, as a fraction.
# TYPE foresight_predictor_mape gauge
foresight_predictor_mape{target="ttft"} 0.051
# HELP foresight_predictor_model_version Version of the model set the producer serves (0: none yet).
# TYPE foresight_predictor_model_version gauge
foresight_predictor_model_version 7
# HELP foresight_predictor_quality_samples Predictions the rolling error figures cover.
# TYPE foresight_predictor_quality_samples gauge
foresight_predictor_quality_samples{target="tpot"} 0
foresight_predictor_quality_samples{target="ttft"} 500
# HELP foresight_predictor_quantile_coverage Fraction of actual latencies at or below the quantile prediction (quantile objective only).
# TYPE foresight_predictor_quantile_coverage gauge
foresight_predictor_quantile_coverage{target="ttft"} 0.88
# HELP foresight_predictor_training_rows Rows the producer's model set was trained on.
# TYPE foresight_predictor_training_rows gauge
foresight_predictor_training_rows 4200
`
	names := []string{"foresight_predictor_drift", "foresight_predictor_mae_ms", "foresight_predictor_mape",
		"foresight_predictor_model_version", "foresight_predictor_quality_samples",
		"foresight_predictor_quantile_coverage", "foresight_predictor_training_rows"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// A pedantic registry accepts it: the metrics match their descriptors.
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}
