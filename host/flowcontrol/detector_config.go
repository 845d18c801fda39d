package flowcontrol

import (
	"errors"
	"fmt"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// DetectorConfig holds the saturation detector's bounds. DefaultDetectorConfig gives each one's
// default and its source; the README's "The saturation detector" section has them in a table.
type DetectorConfig struct {
	// TTFTMargin scales a request's TTFT objective: an endpoint whose valid prediction is at most
	// objective × margin has room for it.
	TTFTMargin float64
	// MaxPredictedWait bounds, for a request without a TTFT objective, the predicted wait
	// (predicted TTFT minus the request's own prefill) an endpoint with room may have.
	MaxPredictedWait time.Duration
	// QueueDepth bounds, for an endpoint judged by its gauges, the engine's waiting queue plus the
	// requests the router sent there since that queue was scraped.
	QueueDepth int64
	// KVCacheUsage bounds, for an endpoint judged by its gauges, the engine's KV-cache use, in (0, 1].
	KVCacheUsage float64
	// MaxMetricsAge is how old the gauges may be and still count; older, only MaxInflight judges.
	MaxMetricsAge time.Duration
	// MaxInflight bounds the router's own in-flight count on an endpoint without a valid
	// prediction: it has room while fewer are in flight there.
	MaxInflight int64
	// Prefill, optional, estimates the request's own prefill time, the part of its predicted TTFT
	// that is not waiting. Nil counts the whole predicted TTFT as wait, which overstates it.
	Prefill func(sdk.Request) time.Duration
}

// DefaultDetectorConfig returns the detector's defaults:
//
//   - TTFTMargin 1: the objective itself, as the slo-threshold filter's ttftThreshold (Llumnix
//     leaves its dispatch threshold to the operator).
//   - MaxPredictedWait 500 ms: Foresight's own choice, with no llm-d counterpart (llm-d's
//     detectors do not predict); the benches of issue 22 are to tune it.
//   - QueueDepth 5, KVCacheUsage 0.8, MaxMetricsAge 200 ms: llm-d's utilization saturation
//     detector (queueDepthThreshold, kvCacheUtilThreshold, metricsStalenessThreshold; the last
//     one is four of its 50 ms scrapes, which is also Foresight's default scrape interval).
//   - MaxInflight 100: llm-d's concurrency saturation detector (maxConcurrency, headroom 0).
func DefaultDetectorConfig() DetectorConfig {
	return DetectorConfig{
		TTFTMargin:       1,
		MaxPredictedWait: 500 * time.Millisecond,
		QueueDepth:       5,
		KVCacheUsage:     0.8,
		MaxMetricsAge:    200 * time.Millisecond,
		MaxInflight:      100,
	}
}

// Validate reports every out-of-range bound, each naming its field.
func (c DetectorConfig) Validate() error {
	var errs []error
	if !(c.TTFTMargin > 0 && c.TTFTMargin <= 10) {
		errs = append(errs, fmt.Errorf("ttftMargin must be in (0, 10], got %v", c.TTFTMargin))
	}
	if c.MaxPredictedWait <= 0 {
		errs = append(errs, fmt.Errorf("maxPredictedWait must be > 0, got %s", c.MaxPredictedWait))
	}
	if c.QueueDepth < 0 {
		errs = append(errs, fmt.Errorf("queueDepth must be >= 0, got %d", c.QueueDepth))
	}
	if !(c.KVCacheUsage > 0 && c.KVCacheUsage <= 1) {
		errs = append(errs, fmt.Errorf("kvCacheUsage must be in (0, 1], got %v", c.KVCacheUsage))
	}
	if c.MaxMetricsAge <= 0 {
		errs = append(errs, fmt.Errorf("maxMetricsAge must be > 0, got %s", c.MaxMetricsAge))
	}
	if c.MaxInflight <= 0 {
		errs = append(errs, fmt.Errorf("maxInflight must be > 0, got %d", c.MaxInflight))
	}
	return errors.Join(errs...)
}
