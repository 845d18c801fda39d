package flowpolicy

import (
	"errors"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// StateParams bound an endpoint judged by its state. Each default's source is in
// StateDefaults.
type StateParams struct {
	// QueueDepth bounds the engine's waiting queue plus the router's requests sent there since
	// that queue was scraped, in [0, 100000].
	QueueDepth int64 `json:"queueDepth"`
	// KVCacheUsage bounds the engine's KV-cache use, in (0, 1].
	KVCacheUsage float64 `json:"kvCacheUsage"`
	// MaxMetricsAgeMs is how old, in ms, the gauges may be and still count, in [1, 600000];
	// older, only MaxInflight judges.
	MaxMetricsAgeMs float64 `json:"maxMetricsAgeMs"`
	// MaxInflight bounds the router's own requests in flight on the endpoint, in [0, 1000000];
	// 0 sets no bound.
	MaxInflight int64 `json:"maxInflight"`
	// MaxQueueWaitMs bounds the waiting queue in time as QueueDepth bounds it in requests: with
	// the endpoint's start rate known (first_token_rate), the depth is at most the requests it
	// starts in this many ms, rounded down; in [0, 600000], 0 for no time bound.
	MaxQueueWaitMs float64 `json:"maxQueueWaitMs"`
	// SlotScrapes is how many scrapes showing a waiting queue beside the same running count make
	// that count the endpoint's slots, once no scrape has shown more running for 10 s: it then
	// has room only while the router has fewer requests in flight there than its slots, so that
	// none waits in its queue (every 2 s without a queue at the slots, one more goes through as
	// a probe). In [0, 1000]; 0 never learns slots.
	SlotScrapes int64 `json:"slotScrapes"`
}

// StateDefaults are saturation-detector's defaults, chosen on the routing bench
// (docs/benchmarks.md, "Flow control"):
//
//   - QueueDepth 2: llm-d's utilization detector uses 5; on the bench 2 cut the critical class's
//     TTFT p99 further on both engine families (1,015 → 489 ms against 777 ms with 5, batch
//     engine at 0.95 of saturation).
//   - KVCacheUsage 1: llm-d's 0.8 held requests a slot engine had room for (SLO attainment
//     0.212 against 0.301); an engine that runs out of KV cache queues the request, which the
//     queue depth sees.
//   - MaxMetricsAgeMs 200: llm-d's metricsStalenessThreshold, four of the router's default 50 ms
//     scrapes.
//   - MaxInflight 0 (no bound): llm-d's concurrency detector's 100 held every request on a
//     batch engine that runs about 350 at once.
//   - MaxQueueWaitMs 100: Foresight's own. A depth of 2 made a slot engine, starting about five
//     requests a second, hold requests most of a second in its queue, committed to it while
//     another server freed first; bounded to what the endpoint starts in 100 ms (a depth of 0
//     there, while a batch engine starting forty a second keeps 2), SLO attainment at 0.95 of
//     saturation rose from 0.454 to 0.564 with the predicted-latency pipeline and from 0.394 to
//     0.533 with load+prefix, and on the batch engine it was the same or better at every load
//     (200 ms gained less on the slot engine).
//   - SlotScrapes 4: Foresight's own. An engine that runs a fixed number of requests at once (a
//     slot engine, or vLLM at max_num_seqs) is best sent none to queue: a request waiting in its
//     queue is committed to it. With its 32 slots learned, the slot engine at 0.95 of saturation
//     rose from 0.564 to 0.622 SLO attainment (predicted-latency) and from 0.533 to 0.620
//     (load+prefix), at 1.2 from 0.292 to 0.379 and 0.288 to 0.360; batch engines, full speed and
//     four times slower, learned nothing and ran as before. Four scrapes are 200 ms of queue at
//     the router's default scrape interval.
func StateDefaults() StateParams {
	return StateParams{QueueDepth: 2, KVCacheUsage: 1, MaxMetricsAgeMs: 200, MaxQueueWaitMs: 100, SlotScrapes: 4}
}

// Validate reports every out-of-range parameter, each naming it.
func (p *StateParams) Validate() error {
	return errors.Join(
		sdk.CheckRange("queueDepth", float64(p.QueueDepth), 0, 100_000),
		sdk.CheckRangeOpenLow("kvCacheUsage", p.KVCacheUsage, 0, 1),
		sdk.CheckRange("maxMetricsAgeMs", p.MaxMetricsAgeMs, 1, 600_000),
		sdk.CheckRange("maxInflight", float64(p.MaxInflight), 0, 1_000_000),
		sdk.CheckRange("maxQueueWaitMs", p.MaxQueueWaitMs, 0, 600_000),
		sdk.CheckRange("slotScrapes", float64(p.SlotScrapes), 0, 1000),
	)
}

// PredictedParams are predicted-saturation-detector's: the prediction rule's bounds, and the
// state rule's for an endpoint without a usable prediction.
type PredictedParams struct {
	StateParams
	// TTFTMargin scales a request's TTFT objective: an endpoint whose prediction is at most
	// objective × margin has room for it; in (0, 10].
	TTFTMargin float64 `json:"ttftMargin"`
	// MaxPredictedWaitMs bounds the predicted wait (the predicted TTFT, which counts the
	// request's own prefill too) an endpoint with room may have, in [1, 600000].
	MaxPredictedWaitMs float64 `json:"maxPredictedWaitMs"`
}

// PredictedDefaults: the state rule's defaults; TTFTMargin 1, the objective itself, as the
// slo-threshold filter's ttftThreshold; MaxPredictedWaitMs 500, Foresight's own with no llm-d
// counterpart. The bench found a fixed wait bound does not carry across engines (on a slot
// engine, whose TTFTs are seconds, 300 ms held 99 % of requests until their TTL), which is why
// the router's default detector is saturation-detector.
func PredictedDefaults() PredictedParams {
	return PredictedParams{StateParams: StateDefaults(), TTFTMargin: 1, MaxPredictedWaitMs: 500}
}

// Validate reports every out-of-range parameter, each naming it.
func (p *PredictedParams) Validate() error {
	return errors.Join(
		p.StateParams.Validate(),
		sdk.CheckRangeOpenLow("ttftMargin", p.TTFTMargin, 0, 10),
		sdk.CheckRange("maxPredictedWaitMs", p.MaxPredictedWaitMs, 1, 600_000),
	)
}
