// Package stats summarises the outcomes of a simulated run the way the routing bench reports
// them: latency percentiles, throughput, SLO attainment, goodput, shed rate and prediction error.
package stats

import (
	"math"
	"slices"
	"time"

	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Outcome is what happened to one request.
type Outcome struct {
	Arrival time.Duration
	// Shed marks a request the router did not serve: the admitter rejected it, or flow control
	// refused or expired it (ShedReason says which); the latency fields are then unused.
	Shed       bool
	ShedReason string
	// Held marks a request that waited in the router's flow-control queue, and Queued is how
	// long, until its dispatch or its shedding; TTFT and E2E include it.
	Held   bool
	Queued time.Duration
	// TTFT is arrival to first token, E2E arrival to last token.
	TTFT, E2E time.Duration
	// TPOTMs is (last − first token) / (output tokens − 1) in ms; 0 with fewer than two tokens.
	TPOTMs       float64
	OutputTokens int
	SLO          sdk.SLO
	// Predicted is the prediction made at dispatch for the chosen endpoint.
	Predicted sdk.Prediction
	// Server is the id of the endpoint that served the request; "" for one shed. Prefill is the
	// id of the endpoint that served its prefill hop when it was split (Server decoded it); "" when
	// served whole.
	Server, Prefill string
	// CachedTokens are the prompt tokens the server's prefix cache served.
	CachedTokens int
	// Direct marks a request another client sent straight to a server, which no router saw (a
	// shared fleet).
	Direct bool
}

// MetSLO reports whether a served request met every objective it had (true without objectives).
func (o *Outcome) MetSLO() bool {
	if o.Shed {
		return false
	}
	if o.SLO.TTFTMs > 0 && ms(o.TTFT) > o.SLO.TTFTMs {
		return false
	}
	return o.SLO.TPOTMs <= 0 || o.OutputTokens < 2 || o.TPOTMs <= o.SLO.TPOTMs
}

// Summary is one strategy's line in the routing bench (its JSON is the bench's per-strategy object).
type Summary struct {
	TTFTMs         Percentiles3 `json:"ttft_ms"`
	TPOTMs         Percentiles2 `json:"tpot_ms"`
	E2EMs          PercentilesE `json:"e2e_ms"`
	ThroughputTokS float64      `json:"throughput_tok_s"`
	// SLOAttainment is the share of requests with an objective that met all of theirs (shed ones
	// count as misses); nil when no request had an objective.
	SLOAttainment *float64 `json:"slo_attainment"`
	// GoodputRPS is served requests per second that met their objectives (all served requests
	// when they had none), over the run's span.
	GoodputRPS float64 `json:"goodput_rps"`
	ShedRate   float64 `json:"shed_rate"`
	// HeldShare is the share of requests that waited in the router's flow-control queue, and
	// QueuedMs how long those waited (dispatched or shed); zero without flow control.
	HeldShare float64      `json:"held_share,omitempty"`
	QueuedMs  Percentiles2 `json:"queued_ms,omitzero"`
	// PredictionMAPE is the mean absolute percentage error of the dispatch-time predictions, per
	// target, over served requests that had a valid prediction; nil where none had.
	PredictionMAPE MAPE `json:"prediction_mape"`
	// PredictionBias is the geometric mean of predicted / actual over the same requests, per
	// target: 1 unbiased, below 1 the predictions run low (MAPE does not tell which way they
	// miss); nil where none had a prediction.
	PredictionBias Bias `json:"prediction_bias"`
	Requests       int  `json:"requests"`
}

// Percentiles3 holds p50, p95 and p99 (internal/quantile's linear interpolation, as every
// percentile of the repository).
type Percentiles3 struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// Of3 returns the p50, p95 and p99 of sorted (ascending); zero when it is empty.
func Of3(sorted []float64) Percentiles3 {
	return Percentiles3{quantile.Sorted(sorted, 0.50), quantile.Sorted(sorted, 0.95), quantile.Sorted(sorted, 0.99)}
}

// Percentiles2 holds p50 and p99.
type Percentiles2 struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// PercentilesE holds p50 and p95.
type PercentilesE struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
}

// PerTarget holds one figure of the predictions per target; nil where nothing was scored.
type PerTarget struct {
	TTFT *float64 `json:"ttft"`
	TPOT *float64 `json:"tpot"`
}

// MAPE holds the prediction error per target as a fraction (0.05 = 5%).
type MAPE = PerTarget

// Bias holds the geometric mean of predicted / actual per target.
type Bias = PerTarget

// Span is the time in seconds from the first arrival to the last completion (a shed request
// ends at its arrival): what throughput and goodput are measured over; 0 without outcomes.
func Span(outcomes []Outcome) float64 {
	var first, last time.Duration = math.MaxInt64, 0
	for i := range outcomes {
		o := &outcomes[i]
		first = min(first, o.Arrival)
		end := o.Arrival
		if !o.Shed {
			end += o.E2E
		}
		last = max(last, end)
	}
	if last <= first {
		return 0
	}
	return (last - first).Seconds()
}

// Summarize computes the summary of outcomes. The span runs from the first arrival to the last
// completion.
func Summarize(outcomes []Outcome) Summary {
	s := Summary{Requests: len(outcomes)}
	var ttft, tpot, e2e, queued []float64
	var tokens, shed, withSLO, met, good int
	var ttftErr, tpotErr errSum
	for i := range outcomes {
		o := &outcomes[i]
		if o.Held {
			queued = append(queued, ms(o.Queued))
		}
		if o.SLO.Any() {
			withSLO++
			if o.MetSLO() {
				met++
			}
		}
		if o.Shed {
			shed++
			continue
		}
		ttft, e2e = append(ttft, ms(o.TTFT)), append(e2e, ms(o.E2E))
		if o.OutputTokens >= 2 {
			tpot = append(tpot, o.TPOTMs)
		}
		tokens += o.OutputTokens
		if o.MetSLO() {
			good++
		}
		if o.Predicted.Valid {
			ttftErr.add(o.Predicted.TTFTMs, ms(o.TTFT))
			if o.OutputTokens >= 2 {
				tpotErr.add(o.Predicted.TPOTMs, o.TPOTMs)
			}
		}
	}
	slices.Sort(ttft)
	slices.Sort(tpot)
	slices.Sort(e2e)
	s.TTFTMs = Of3(ttft)
	s.TPOTMs = Percentiles2{quantile.Sorted(tpot, 0.50), quantile.Sorted(tpot, 0.99)}
	s.E2EMs = PercentilesE{quantile.Sorted(e2e, 0.50), quantile.Sorted(e2e, 0.95)}
	if span := Span(outcomes); span > 0 {
		s.ThroughputTokS = float64(tokens) / span
		s.GoodputRPS = float64(good) / span
	}
	if len(outcomes) > 0 {
		s.ShedRate = float64(shed) / float64(len(outcomes))
		s.HeldShare = float64(len(queued)) / float64(len(outcomes))
	}
	slices.Sort(queued)
	s.QueuedMs = Percentiles2{quantile.Sorted(queued, 0.50), quantile.Sorted(queued, 0.99)}
	if withSLO > 0 {
		a := float64(met) / float64(withSLO)
		s.SLOAttainment = &a
	}
	s.PredictionMAPE = MAPE{TTFT: ttftErr.mean(), TPOT: tpotErr.mean()}
	s.PredictionBias = Bias{TTFT: ttftErr.bias(), TPOT: tpotErr.bias()}
	return s
}

type errSum struct {
	sum, logRatio float64
	n             int
}

// add scores one prediction; an unmeasured actual or an absent estimate (a TPOT of 0: a young
// producer's "unknown") does not count.
func (e *errSum) add(predicted, actual float64) {
	if actual <= 0 || predicted <= 0 {
		return
	}
	e.sum += math.Abs(predicted-actual) / actual
	e.logRatio += math.Log(predicted / actual)
	e.n++
}

func (e *errSum) mean() *float64 {
	if e.n == 0 {
		return nil
	}
	m := e.sum / float64(e.n)
	return &m
}

// bias is the geometric mean of predicted / actual; nil when nothing was scored.
func (e *errSum) bias() *float64 {
	if e.n == 0 {
		return nil
	}
	b := math.Exp(e.logRatio / float64(e.n))
	return &b
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
