package endpoints

import (
	"errors"
	"fmt"
	"strings"
)

// MetricNames are the Prometheus metric names read from an engine's /metrics.
type MetricNames struct {
	// Waiting is a gauge of the requests queued.
	Waiting string
	// Running is a gauge of the requests in the batch.
	Running string
	// KVCacheUsage is a gauge of the KV-cache utilisation, 0..1.
	KVCacheUsage string
	// KVCacheUsageFallback is read when KVCacheUsage is absent ("" for none): older engines
	// expose the same gauge under another name.
	KVCacheUsageFallback string
	// CacheConfig is an info gauge whose labels block_size and num_gpu_blocks give the cache
	// capacity ("" when the engine has none).
	CacheConfig string
}

// Engines lists the engines Names knows.
var Engines = []string{"vllm", "sglang"}

// Names returns the default names for engine "vllm" or "sglang" (an error for anything else).
//
// vLLM (V1 engine, vllm/v1/metrics/loggers.py, PrometheusStatLogger; docs/design/metrics.md):
// vllm:num_requests_waiting, vllm:num_requests_running, vllm:kv_cache_usage_perc and the info
// gauge vllm:cache_config_info (set in log_metrics_info("cache_config"), one series per engine
// index). The V0 engine (e.g. v0.6) exposes only vllm:gpu_cache_usage_perc, which V1 kept for a
// while as a deprecated alias of vllm:kv_cache_usage_perc; it is the fallback.
//
// SGLang (python/sglang/srt/metrics/collector.py, SchedulerMetricsCollector; docs
// references/production_metrics.md): sglang:num_queue_reqs ("the number of requests in the
// waiting queue"), sglang:num_running_reqs and sglang:token_usage (the KV pool's used fraction).
// SGLang has no cache-config info metric; its capacity gauge sglang:max_total_num_tokens counts
// tokens, not blocks, so CacheConfig is "".
func Names(engine string) (MetricNames, error) {
	switch engine {
	case "vllm":
		return MetricNames{
			Waiting:              "vllm:num_requests_waiting",
			Running:              "vllm:num_requests_running",
			KVCacheUsage:         "vllm:kv_cache_usage_perc",
			KVCacheUsageFallback: "vllm:gpu_cache_usage_perc",
			CacheConfig:          "vllm:cache_config_info",
		}, nil
	case "sglang":
		return MetricNames{
			Waiting:      "sglang:num_queue_reqs",
			Running:      "sglang:num_running_reqs",
			KVCacheUsage: "sglang:token_usage",
		}, nil
	}
	return MetricNames{}, fmt.Errorf("unknown engine %q; accepted: %s", engine, strings.Join(Engines, ", "))
}

// Validate reports a missing required name (Waiting, Running and KVCacheUsage are required).
func (n MetricNames) Validate() error {
	switch {
	case n.Waiting == "":
		return errors.New("metric names: waiting is required")
	case n.Running == "":
		return errors.New("metric names: running is required")
	case n.KVCacheUsage == "":
		return errors.New("metric names: kvCacheUsage is required")
	}
	return nil
}
