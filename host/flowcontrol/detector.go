package flowcontrol

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Saturation says why the pool is saturated for a request. Its String is a stable, kebab-case
// label for metrics and traces; the zero value means not saturated.
type Saturation uint8

const (
	// SaturationNone: some endpoint has room for the request.
	SaturationNone Saturation = iota
	// SaturationNoEndpoints: the cycle has no endpoint at all (the scale-from-zero case).
	SaturationNoEndpoints
	// SaturationPredicted: every endpoint was judged by its prediction and none is within the
	// bound (Predictions on).
	SaturationPredicted
	// SaturationEngines: every endpoint was judged by its gauges and in-flight count (the
	// default, and any endpoint without a usable prediction), and each is full.
	SaturationEngines
	// SaturationMixed: some endpoints were judged by prediction, the others by their gauges, and
	// all are full.
	SaturationMixed
)

func (s Saturation) String() string {
	switch s {
	case SaturationNone:
		return "none"
	case SaturationNoEndpoints:
		return "no-endpoints"
	case SaturationPredicted:
		return "predicted-full"
	case SaturationEngines:
		return "engines-full"
	case SaturationMixed:
		return "all-full"
	}
	return fmt.Sprintf("saturation(%d)", uint8(s))
}

// Verdict is the detector's answer for one request on one cycle.
type Verdict struct {
	// Saturated is true when no endpoint has room for the request: it should wait in the queue.
	Saturated bool
	// Reason says why it is saturated; SaturationNone otherwise.
	Reason Saturation
	// Room counts the endpoints with room for the request.
	Room int
	// Idle counts the idle endpoints (room whatever their prediction); ByPrediction and
	// ByFallback count the others judged by each rule.
	Idle, ByPrediction, ByFallback int
	// Wait estimates how long the request would wait before its prefill starts: 0 when an
	// endpoint is idle or has room by its gauges, else the least over the endpoints with a usable
	// prediction of predicted TTFT minus the request's own prefill. WaitKnown is false when
	// neither exists (no usable prediction and every endpoint full): gauges have no unit of time
	// to estimate with.
	Wait      time.Duration
	WaitKnown bool
}

func (v Verdict) String() string {
	state := "room on " + fmt.Sprint(v.Room)
	if v.Saturated {
		state = "saturated (" + v.Reason.String() + ")"
	}
	wait := "unknown"
	if v.WaitKnown {
		wait = v.Wait.String()
	}
	return fmt.Sprintf("%s: %d idle, %d judged by prediction, %d by gauges and in-flight counts; wait %s",
		state, v.Idle, v.ByPrediction, v.ByFallback, wait)
}

// Detector decides whether the pool is saturated for a request. It is pure logic and holds only
// its configuration, so one Detector may serve concurrent callers.
type Detector struct {
	cfg DetectorConfig
}

// NewDetector validates cfg and returns a detector using it.
func NewDetector(cfg DetectorConfig) (*Detector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("saturation detector: %w", err)
	}
	return &Detector{cfg: cfg}, nil
}

// Check judges every endpoint of c for c's request (see the README for the rules) and says
// whether none has room. A nil cycle has no endpoints. Check does not allocate.
func (d *Detector) Check(c *sdk.Cycle) Verdict {
	var v Verdict
	if c == nil || len(c.Endpoints) == 0 {
		return Verdict{Saturated: true, Reason: SaturationNoEndpoints}
	}
	var prefill time.Duration
	if d.cfg.Prefill != nil {
		prefill = max(d.cfg.Prefill(c.Request), 0)
	}
	v.Wait = time.Duration(math.MaxInt64)
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		var room bool
		switch {
		case d.idle(e.State):
			v.Idle++
			room = true
			v.Wait, v.WaitKnown = 0, true
		case d.cfg.Predictions && e.Prediction.Usable():
			v.ByPrediction++
			wait := max(msDuration(e.Prediction.TTFTMs)-prefill, 0)
			room = d.predictedRoom(c.Request.SLO.TTFTMs, e.Prediction.TTFTMs, wait)
			v.Wait, v.WaitKnown = min(v.Wait, wait), true
		default:
			v.ByFallback++
			room = d.fallbackRoom(e.State)
			switch {
			case room:
				v.Wait, v.WaitKnown = 0, true
			case e.Prediction.Usable(): // full by its gauges: the prediction still estimates the wait
				v.Wait, v.WaitKnown = min(v.Wait, max(msDuration(e.Prediction.TTFTMs)-prefill, 0)), true
			}
		}
		if room {
			v.Room++
		}
	}
	if !v.WaitKnown {
		v.Wait = 0
	}
	if v.Room > 0 {
		return v
	}
	v.Saturated = true
	switch {
	case v.ByFallback == 0:
		v.Reason = SaturationPredicted
	case v.ByPrediction == 0:
		v.Reason = SaturationEngines
	default:
		v.Reason = SaturationMixed
	}
	return v
}

// Predictions reports whether the detector judges endpoints by their predictions: then it must
// see the producer's output (Check after the pipeline ran), and Restrict leaves a cycle whole.
func (d *Detector) Predictions() bool { return d.cfg.Predictions }

// Restrict keeps, when the detector judges endpoints by their state (predictions off, the
// default), only c's endpoints with room — idle, or within the gauge and in-flight bounds — so
// that the pipeline picks where the request will not queue. It reports false when c had
// endpoints and none is left: the pool is saturated for the request, which then waits without a
// pipeline run. With predictions on, c is left whole and Restrict reports true. It allocates
// nothing.
func (d *Detector) Restrict(c *sdk.Cycle) bool {
	if d.cfg.Predictions || len(c.Endpoints) == 0 {
		return true
	}
	c.Endpoints = slices.DeleteFunc(c.Endpoints, func(e sdk.Endpoint) bool { return !d.room(e.State) })
	return len(c.Endpoints) > 0
}

// room: idle, or within the gauge and in-flight bounds.
func (d *Detector) room(s sdk.EndpointState) bool { return d.idle(s) || d.fallbackRoom(s) }

// predictedRoom: the predicted wait within MaxPredictedWait, or, with a TTFT objective, the
// predicted TTFT within objective × margin. The second lets a request whose objective tolerates
// the wait go at once; the first lets one go whose own prefill already exceeds its objective,
// which waiting in the router could not mend.
func (d *Detector) predictedRoom(sloMs, ttftMs float64, wait time.Duration) bool {
	return wait <= d.cfg.MaxPredictedWait || (sloMs > 0 && ttftMs <= sloMs*d.cfg.TTFTMargin)
}

// idle: none of the router's requests in flight there and, while the gauges are fresh, nothing
// waiting or running. An idle endpoint has room whatever its prediction, so a request never
// waits in the router beside an idle server.
func (d *Detector) idle(s sdk.EndpointState) bool {
	if s.InflightRequests > 0 {
		return false
	}
	return msDuration(s.MetricsAgeMs) > d.cfg.MaxMetricsAge || s.Waiting+s.Running == 0
}

// fallbackRoom: fewer than MaxInflight of the router's requests in flight there, and, while the
// gauges are fresh, a waiting queue (plus what was sent since it was scraped, counted as waiting
// since the scrape cannot tell) within QueueDepth and KV-cache use within KVCacheUsage. Stale
// gauges are ignored rather than trusted: a queue scraped long ago may since have drained.
func (d *Detector) fallbackRoom(s sdk.EndpointState) bool {
	if d.cfg.MaxInflight > 0 && s.InflightRequests >= d.cfg.MaxInflight {
		return false
	}
	if msDuration(s.MetricsAgeMs) > d.cfg.MaxMetricsAge {
		return true
	}
	return s.Waiting+s.DispatchedSinceScrape <= d.cfg.QueueDepth && s.KVCacheUsage <= d.cfg.KVCacheUsage
}

// msDuration converts milliseconds to a Duration, saturating instead of overflowing.
func msDuration(ms float64) time.Duration {
	d := ms * float64(time.Millisecond)
	if d >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}
