package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets span 1 ms to ~65 s, doubling: TTFTs from a cached short prompt to a long queue.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// waitBuckets span 10 µs to ~1.3 s, doubling: from a round that starts at once to a long queue of rounds.
var waitBuckets = prometheus.ExponentialBuckets(1e-5, 2, 18)

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
//	foresight_decision_wait_seconds                     time a request waited for the round that decided it
//	foresight_decisions_redone_total                    decisions taken again because a request of the same round changed them
//	foresight_decisions_total{profile,outcome}          requests decided, by the scheduling profile that decided them and
//	                                                    outcome: picked, rejected (the admitter shed it), no_candidates
//
// and, for the requests of an experiment's arms (an arm label on the llm-d names would change
// their series for every user, so the arms have their own):
//
//	foresight_experiment_ttft_seconds{arm}              observed TTFT
//	foresight_experiment_tpot_seconds{arm}              observed TPOT
//	foresight_experiment_e2e_seconds{arm}               from dispatch to the answer's last byte
//	foresight_experiment_requests_total{arm,result}     result: slo_met, slo_missed, no_slo, failed (429, 5xx)
type Requests struct {
	ttft, predictedTTFT, tpot, predictedTPOT prometheus.Histogram
	violations                               *prometheus.CounterVec
	total                                    *prometheus.CounterVec
	decisionWait                             prometheus.Histogram
	redone                                   prometheus.Counter
	decided                                  *prometheus.CounterVec
	armTTFT, armTPOT, armE2E                 *prometheus.HistogramVec
	armTotal                                 *prometheus.CounterVec
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
		decisionWait: hist("foresight_decision_wait_seconds", "Time a request waited for the decision round that decided it (server.decisionConcurrency).", waitBuckets),
		redone: prometheus.NewCounter(prometheus.CounterOpts{Name: "foresight_decisions_redone_total",
			Help: "Decisions taken again in the next round because a request decided before in the same round took the pick or raised the prefix match."}),
		decided: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_decisions_total",
			Help: "Requests decided, by the scheduling profile that decided them and outcome (picked, rejected, no_candidates)."}, []string{"profile", "outcome"}),
		armTTFT: armHist("foresight_experiment_ttft_seconds", "Observed time to first token, by experiment arm.", latencyBuckets),
		armTPOT: armHist("foresight_experiment_tpot_seconds", "Observed time per output token, by experiment arm.", tpotBuckets),
		armE2E:  armHist("foresight_experiment_e2e_seconds", "Time from dispatch to the answer's last byte, by experiment arm.", latencyBuckets),
		armTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_experiment_requests_total",
			Help: "Requests of an experiment's arms by result: slo_met, slo_missed, no_slo, failed (429 or 5xx)."}, []string{"arm", "result"}),
	}
	for _, c := range []prometheus.Collector{r.ttft, r.predictedTTFT, r.tpot, r.predictedTPOT, r.violations, r.total, r.decisionWait, r.redone, r.decided,
		r.armTTFT, r.armTPOT, r.armE2E, r.armTotal} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func armHist(name, help string, buckets []float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"arm"})
}

// Request is one answered request as the metrics see it. Latencies are in ms; 0 is "not observed".
type Request struct {
	Code                             int
	TTFTMs, TPOTMs, E2EMs            float64
	PredictedTTFTMs, PredictedTPOTMs float64
	SLOTTFTMs, SLOTPOTMs             float64
	// Arm is the experiment arm that decided the request; "" outside an experiment.
	Arm string
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
	if r.Arm != "" {
		m.observeArm(r)
	}
}

// ObserveDecisionWait records how long a request waited for the round that decided it.
func (m *Requests) ObserveDecisionWait(d time.Duration) { m.decisionWait.Observe(d.Seconds()) }

// DecisionsRedone counts n decisions a round discarded, to be taken again in the next.
func (m *Requests) DecisionsRedone(n int) { m.redone.Add(float64(n)) }

// Decided counts a request decided by profile's pipeline with outcome (pipeline.Trace.Outcome:
// picked, rejected, no candidates).
func (m *Requests) Decided(profile, outcome string) {
	m.decided.WithLabelValues(profile, strings.ReplaceAll(outcome, " ", "_")).Inc()
}

// observeArm records r under its experiment arm.
func (m *Requests) observeArm(r Request) {
	for _, o := range []struct {
		h  *prometheus.HistogramVec
		ms float64
	}{{m.armTTFT, r.TTFTMs}, {m.armTPOT, r.TPOTMs}, {m.armE2E, r.E2EMs}} {
		if o.ms > 0 {
			o.h.WithLabelValues(r.Arm).Observe(o.ms / 1e3)
		}
	}
	m.armTotal.WithLabelValues(r.Arm, armResult(r)).Inc()
}

// armResult classifies a request for foresight_experiment_requests_total, by the rule of
// host/experiment: an objective whose value was not observed counts as met.
func armResult(r Request) string {
	switch {
	case r.Code == 429 || r.Code >= 500:
		return "failed"
	case r.SLOTTFTMs <= 0 && r.SLOTPOTMs <= 0:
		return "no_slo"
	case (r.SLOTTFTMs > 0 && r.TTFTMs > r.SLOTTFTMs) || (r.SLOTPOTMs > 0 && r.TPOTMs > r.SLOTPOTMs):
		return "slo_missed"
	default:
		return "slo_met"
	}
}
