package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets span 1 ms to ~65 s, doubling: TTFTs from a cached short prompt to a long queue.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// tpotBuckets span 1 ms to ~1 s per token.
var tpotBuckets = prometheus.ExponentialBuckets(0.001, 1.5, 18)

// Requests are the proxy's per-request metrics, under llm-d's names where they exist (DESIGN §7):
//
//	llm_d_epp_request_ttft_seconds                      observed TTFT of streamed requests
//	llm_d_epp_request_predicted_ttft_seconds            the producer's TTFT prediction for the chosen endpoint
//	llm_d_epp_request_streaming_tpot_seconds            observed TPOT ((last − first token) / (completion tokens − 1))
//	llm_d_epp_request_predicted_tpot_seconds            the TPOT prediction
//	llm_d_epp_request_slo_violation_total{type}         requests that missed their ttft or tpot objective
//	foresight_requests_total{code}                      answered requests by HTTP status (499: the client left)
type Requests struct {
	ttft, predictedTTFT, tpot, predictedTPOT prometheus.Histogram
	violations                               *prometheus.CounterVec
	total                                    *prometheus.CounterVec
}

// NewRequests returns the request metrics, registered with reg.
func NewRequests(reg prometheus.Registerer) (*Requests, error) {
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	}
	r := &Requests{
		ttft:          hist("llm_d_epp_request_ttft_seconds", "Observed time to first token of streamed requests.", latencyBuckets),
		predictedTTFT: hist("llm_d_epp_request_predicted_ttft_seconds", "Predicted time to first token on the chosen endpoint.", latencyBuckets),
		tpot:          hist("llm_d_epp_request_streaming_tpot_seconds", "Observed time per output token of streamed requests.", tpotBuckets),
		predictedTPOT: hist("llm_d_epp_request_predicted_tpot_seconds", "Predicted time per output token on the chosen endpoint.", tpotBuckets),
		violations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llm_d_epp_request_slo_violation_total",
			Help: "Requests that missed an objective, by type (ttft, tpot)."}, []string{"type"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_requests_total",
			Help: "Requests answered, by HTTP status code (499: the client went away first)."}, []string{"code"}),
	}
	for _, c := range []prometheus.Collector{r.ttft, r.predictedTTFT, r.tpot, r.predictedTPOT, r.violations, r.total} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Request is one answered request as the metrics see it. Latencies are in ms; 0 is "not observed".
type Request struct {
	Code                             int
	TTFTMs, TPOTMs                   float64
	PredictedTTFTMs, PredictedTPOTMs float64
	SLOTTFTMs, SLOTPOTMs             float64
}

// Observe records r.
func (m *Requests) Observe(r Request) {
	m.total.WithLabelValues(strconv.Itoa(r.Code)).Inc()
	if r.TTFTMs > 0 {
		m.ttft.Observe(r.TTFTMs / 1e3)
		if r.SLOTTFTMs > 0 && r.TTFTMs > r.SLOTTFTMs {
			m.violations.WithLabelValues("ttft").Inc()
		}
	}
	if r.TPOTMs > 0 {
		m.tpot.Observe(r.TPOTMs / 1e3)
		if r.SLOTPOTMs > 0 && r.TPOTMs > r.SLOTPOTMs {
			m.violations.WithLabelValues("tpot").Inc()
		}
	}
	if r.PredictedTTFTMs > 0 {
		m.predictedTTFT.Observe(r.PredictedTTFTMs / 1e3)
	}
	if r.PredictedTPOTMs > 0 {
		m.predictedTPOT.Observe(r.PredictedTPOTMs / 1e3)
	}
}
