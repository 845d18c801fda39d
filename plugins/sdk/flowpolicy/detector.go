package flowpolicy

import (
	"context"
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// The detectors' types and their verdicts' reasons.
const (
	StateDetectorType     = "saturation-detector"
	PredictedDetectorType = "predicted-saturation-detector"

	// ReasonNoEndpoints: the cycle has no endpoint at all (the scale-from-zero case).
	ReasonNoEndpoints = "no-endpoints"
	// ReasonEnginesFull: every endpoint was judged by its state, and each is full.
	ReasonEnginesFull = "engines-full"
	// ReasonPredictedFull: every endpoint was judged by its prediction, and none is within bound.
	ReasonPredictedFull = "predicted-full"
	// ReasonAllFull: some endpoints were judged by prediction, the others by their state, and all
	// are full.
	ReasonAllFull = "all-full"
)

// StateDetector is saturation-detector: an endpoint has room when it is idle, or when its
// gauges (while fresh) and the router's in-flight count are within bounds, and, once it has
// learned the endpoint's slots, while the router has fewer in flight there. It reads only the
// endpoints' state, so the router asks it before the pipeline runs and lets the pipeline choose
// among the endpoints with room.
type StateDetector struct {
	sdk.Params[StateParams]
	learned slotLearner
}

// NewStateDetector returns a saturation-detector with StateDefaults.
func NewStateDetector() *StateDetector {
	d := &StateDetector{}
	d.Init(StateDefaults)
	return d
}

// Type implements sdk.Plugin.
func (*StateDetector) Type() string { return StateDetectorType }

// Description implements sdk.Plugin.
func (*StateDetector) Description() string {
	return "flow control: room where an endpoint is idle or its queue, KV cache and in-flight count are within bounds"
}

// Reads implements sdk.Reader: the state columns the rule reads.
func (*StateDetector) Reads() []string { return stateReads }

var stateReads = []string{
	"endpoints.states.waiting", "endpoints.states.running", "endpoints.states.kv_cache_usage",
	"endpoints.states.inflight_requests", "endpoints.states.dispatched_since_scrape",
	"endpoints.states.metrics_age_ms", "endpoints.states.first_token_rate",
}

// Detect implements sdk.Detector. The wait is unknown when every endpoint is full: gauges have
// no unit of time to estimate it with.
func (d *StateDetector) Detect(_ context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, error) {
	p := d.Get()
	v := sdk.SaturationVerdict{Room: make([]int, len(c.Endpoints)), WaitMs: -1}
	for i := range c.Endpoints {
		v.Room[i] = p.room(c.Endpoints[i].State, d.learned.learn(c, i, p, &v))
		if v.Room[i] > 0 {
			v.WaitMs = 0
		}
	}
	if v.WaitMs < 0 {
		v.Reason = ReasonEnginesFull
	}
	if len(c.Endpoints) == 0 {
		v.Reason = ReasonNoEndpoints
	}
	return v, nil
}

// room counts how many more requests an endpoint judged by its state takes: while its gauges are
// fresh, the queue depth left (its waiting queue and what the router sent since the scrape count
// against it) unless its KV cache is over bound; with an in-flight bound, at most the in-flight
// room. The bound is MaxInflight, or the endpoint's learned slots (learned, from
// slotLearner.learn) when lower. An idle endpoint (nothing of the router's in flight and,
// while fresh, nothing waiting or running) takes at least one request whatever the bounds, so
// that a request never waits in the router beside an idle server. Stale gauges are ignored rather
// than trusted — a queue scraped long ago may since have drained — and without an in-flight bound
// such an endpoint takes one request at a time, each judged again.
func (p *StateParams) room(s sdk.EndpointState, learned int64) int {
	fresh := s.MetricsAgeMs <= p.MaxMetricsAgeMs
	n := int64(1)
	if fresh {
		n = p.depth(s) + 1 - s.Waiting - s.DispatchedSinceScrape
		if s.KVCacheUsage > p.KVCacheUsage {
			n = 0
		}
	}
	limit := p.MaxInflight
	if learned > 0 && (limit == 0 || learned < limit) {
		limit = learned
	}
	if limit > 0 {
		if !fresh {
			n = math.MaxInt64
		}
		n = min(n, limit-s.InflightRequests)
	}
	if idle(p, s) {
		n = max(n, 1)
	}
	return int(max(min(n, math.MaxInt32), 0))
}

// depth is the waiting queue an endpoint may have with room left: QueueDepth, and with a time
// bound and the endpoint's start rate known, no more than it starts in MaxQueueWaitMs. The count
// alone does not carry across engines: a slot engine that starts a few requests a second makes a
// queue of 2 wait most of a second, a batch engine starting forty a second only 50 ms.
func (p *StateParams) depth(s sdk.EndpointState) int64 {
	if p.MaxQueueWaitMs <= 0 || !(s.FirstTokenRate > 0) {
		return p.QueueDepth
	}
	return min(p.QueueDepth, int64(s.FirstTokenRate*p.MaxQueueWaitMs/1000))
}

// PredictedDetector is predicted-saturation-detector: an endpoint with a usable prediction has
// room when the predicted wait is within MaxPredictedWaitMs or, for a request with a TTFT
// objective, the predicted TTFT is within objective × TTFTMargin; an idle endpoint has room
// whatever its prediction; any other endpoint is judged by the state rule. It reads the
// predictions, so the router asks it after the pipeline, on the candidates.
type PredictedDetector struct {
	sdk.Params[PredictedParams]
	learned slotLearner
}

// NewPredictedDetector returns a predicted-saturation-detector with PredictedDefaults.
func NewPredictedDetector() *PredictedDetector {
	d := &PredictedDetector{}
	d.Init(PredictedDefaults)
	return d
}

// Type implements sdk.Plugin.
func (*PredictedDetector) Type() string { return PredictedDetectorType }

// Description implements sdk.Plugin.
func (*PredictedDetector) Description() string {
	return "flow control: room where the predicted TTFT is within the objective or the predicted wait within bound"
}

// Reads implements sdk.Reader.
func (*PredictedDetector) Reads() []string { return predictedReads }

var predictedReads = append([]string{"request", "endpoints.predictions"}, stateReads...)

// Detect implements sdk.Detector. The wait is 0 when an endpoint has room by its state or is
// idle, else the least predicted TTFT over the endpoints with a usable prediction, or unknown
// without one. The predicted TTFT counts the request's own prefill as wait, which overstates it.
func (d *PredictedDetector) Detect(_ context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, error) {
	p := d.Get()
	v := sdk.SaturationVerdict{Room: make([]int, len(c.Endpoints)), WaitMs: math.Inf(1)}
	byPrediction, byState := 0, 0
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		bound := d.learned.learn(c, i, &p.StateParams, &v)
		switch {
		case idle(&p.StateParams, e.State):
			v.Room[i] = p.room(e.State, bound)
			v.WaitMs = 0
		case e.Prediction.Usable():
			byPrediction++
			ttft := e.Prediction.TTFTMs
			slo := c.Request.SLO.TTFTMs
			if ttft <= p.MaxPredictedWaitMs || (slo > 0 && ttft <= slo*p.TTFTMargin) {
				v.Room[i] = 1
			}
			v.WaitMs = min(v.WaitMs, ttft)
		default:
			byState++
			v.Room[i] = p.room(e.State, bound)
			if v.Room[i] > 0 {
				v.WaitMs = 0
			}
		}
	}
	if math.IsInf(v.WaitMs, 1) {
		v.WaitMs = -1
	}
	if !v.Saturated() {
		return v, nil
	}
	switch {
	case len(c.Endpoints) == 0:
		v.Reason = ReasonNoEndpoints
	case byState == 0:
		v.Reason = ReasonPredictedFull
	case byPrediction == 0:
		v.Reason = ReasonEnginesFull
	default:
		v.Reason = ReasonAllFull
	}
	return v, nil
}

// idle: nothing of the router's in flight and, while the gauges are fresh, nothing waiting or
// running.
func idle(p *StateParams, s sdk.EndpointState) bool {
	return s.InflightRequests == 0 && (s.MetricsAgeMs > p.MaxMetricsAgeMs || s.Waiting+s.Running == 0)
}
