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
	// Predictions judges an endpoint with a usable prediction by it (TTFTMargin, MaxPredictedWait)
	// instead of by its gauges. Off, every endpoint is judged by its gauges and in-flight count,
	// and predictions only give the verdict's wait estimate.
	Predictions bool
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
	// MaxInflight bounds the router's own in-flight count on an endpoint judged by its gauges: it
	// has room while fewer are in flight there; 0 sets no bound.
	MaxInflight int64
	// Prefill, optional, estimates the request's own prefill time, the part of its predicted TTFT
	// that is not waiting. Nil counts the whole predicted TTFT as wait, which overstates it.
	Prefill func(sdk.Request) time.Duration
}

// DefaultDetectorConfig returns the detector's defaults, chosen on the routing bench (issue 22;
// docs/benchmarks.md, "Flow control"):
//
//   - Predictions off: with a fixed wait bound, judging by prediction held every request on a
//     slot engine, whose TTFTs are seconds (MaxPredictedWait 300 ms: 99 % shed at its TTL), and
//     the SLO clause let loose-objective requests fill the servers' queues; the gauges' queue
//     depth carries from one engine family to the other.
//   - TTFTMargin 1: the objective itself, as the slo-threshold filter's ttftThreshold.
//   - MaxPredictedWait 500 ms: Foresight's own, with no llm-d counterpart.
//   - QueueDepth 2: llm-d's utilization detector uses 5; on the bench 2 cut the critical class's
//     TTFT p99 further on both engine families (1,015 → 489 ms against 777 ms with 5, batch
//     engine at 0.95 of saturation).
//   - KVCacheUsage 1: llm-d's 0.8 held requests a slot engine had room for (SLO attainment
//     0.212 against 0.301); an engine that runs out of KV cache queues the request, which the
//     queue depth sees.
//   - MaxMetricsAge 200 ms: llm-d's metricsStalenessThreshold, four of Foresight's default 50 ms
//     scrapes.
//   - MaxInflight 0 (no bound): llm-d's concurrency detector's 100 held every request on a
//     batch engine that runs about 350 at once.
func DefaultDetectorConfig() DetectorConfig {
	return DetectorConfig{
		TTFTMargin:       1,
		MaxPredictedWait: 500 * time.Millisecond,
		QueueDepth:       2,
		KVCacheUsage:     1,
		MaxMetricsAge:    200 * time.Millisecond,
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
	if c.MaxInflight < 0 {
		errs = append(errs, fmt.Errorf("maxInflight must be >= 0 (0: no bound), got %d", c.MaxInflight))
	}
	return errors.Join(errs...)
}
