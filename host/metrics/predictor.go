// Package metrics holds the host's Prometheus collectors. Each reads the state it reports from
// its owner at scrape time (no copy to keep in step), and Registry gathers them for the admin
// listener's /metrics.
package metrics

import (
	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/prometheus/client_golang/prometheus"
)

// Predictor exposes the producer's learning and its quality as the host last heard of them:
// the Observe batcher's counts and the PredictorStats of the producer's last answer.
//
//	foresight_predictor_samples_total{result}       samples sent to Observe: accepted, rejected (no target to learn), failed (the call failed)
//	foresight_predictor_observe_batches_total       Observe calls
//	foresight_predictor_mape{target}                rolling mean absolute percentage error, as a fraction (ttft, tpot)
//	foresight_predictor_mae_ms{target}              rolling mean absolute error in ms
//	foresight_predictor_quantile_coverage{target}   fraction of actuals at or below the prediction (quantile objective only)
//	foresight_predictor_quality_samples{target}     predictions the rolling figures cover
//	foresight_predictor_model_version               version of the model set in service (0: none yet)
//	foresight_predictor_training_rows               rows it was trained on
//	foresight_predictor_drift                       1 while the drift guard holds predictions back
//
// The quality gauges appear once the producer has answered an Observe call with its stats.
type Predictor struct {
	counts func() feedback.Counts

	samples, batches                      *prometheus.Desc
	mape, mae, coverage, qualitySamples   *prometheus.Desc
	modelVersion, trainingRows, driftDesc *prometheus.Desc
}

// NewPredictor returns a collector that calls counts at every scrape (feedback.Batcher.Counts).
func NewPredictor(counts func() feedback.Counts) *Predictor {
	target := []string{"target"}
	return &Predictor{
		counts: counts,
		samples: prometheus.NewDesc("foresight_predictor_samples_total",
			"Finished-request samples sent to the producer's Observe, by result: accepted, rejected (nothing to learn), failed (the call failed).", []string{"result"}, nil),
		batches: prometheus.NewDesc("foresight_predictor_observe_batches_total",
			"Observe calls made to the producer.", nil, nil),
		mape: prometheus.NewDesc("foresight_predictor_mape",
			"Rolling mean absolute percentage error of the producer's predictions, as a fraction.", target, nil),
		mae: prometheus.NewDesc("foresight_predictor_mae_ms",
			"Rolling mean absolute error of the producer's predictions, in milliseconds.", target, nil),
		coverage: prometheus.NewDesc("foresight_predictor_quantile_coverage",
			"Fraction of actual latencies at or below the quantile prediction (quantile objective only).", target, nil),
		qualitySamples: prometheus.NewDesc("foresight_predictor_quality_samples",
			"Predictions the rolling error figures cover.", target, nil),
		modelVersion: prometheus.NewDesc("foresight_predictor_model_version",
			"Version of the model set the producer serves (0: none yet).", nil, nil),
		trainingRows: prometheus.NewDesc("foresight_predictor_training_rows",
			"Rows the producer's model set was trained on.", nil, nil),
		driftDesc: prometheus.NewDesc("foresight_predictor_drift",
			"1 while the producer's drift guard marks its predictions invalid, else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (p *Predictor) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.samples, p.batches, p.mape, p.mae, p.coverage, p.qualitySamples,
		p.modelVersion, p.trainingRows, p.driftDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *Predictor) Collect(ch chan<- prometheus.Metric) {
	c := p.counts()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(p.samples, c.Accepted, "accepted")
	counter(p.samples, c.Sent-min(c.Accepted, c.Sent), "rejected")
	counter(p.samples, c.Failed, "failed")
	counter(p.batches, c.Batches)
	st := c.Stats
	if st == nil {
		return
	}
	for _, t := range []struct {
		name string
		s    *sdk.TargetStats
	}{{"ttft", &st.TTFT}, {"tpot", &st.TPOT}} {
		gauge(p.qualitySamples, float64(t.s.Samples), t.name)
		if t.s.Samples == 0 {
			continue // no error to report yet
		}
		gauge(p.mape, t.s.MAPE, t.name)
		gauge(p.mae, t.s.MAE, t.name)
		if t.s.QuantileCoverage != nil {
			gauge(p.coverage, *t.s.QuantileCoverage, t.name)
		}
	}
	gauge(p.modelVersion, float64(st.ModelVersion))
	gauge(p.trainingRows, float64(st.TrainingRows))
	drift := 0.0
	if st.Drift {
		drift = 1
	}
	gauge(p.driftDesc, drift)
}
