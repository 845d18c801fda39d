package emulator

import (
	"fmt"
	"net/http"
	"strings"
)

// handleMetrics writes the engine's metrics in Prometheus text format under vLLM's names.
func (s *Server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	m := s.Metrics()
	var b strings.Builder
	label := fmt.Sprintf("{model_name=%q}", s.model)
	metric := func(name, typ, help, labels string, v any) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s%s %v\n", name, help, name, typ, name, labels, v)
	}
	metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", label, m.Running)
	metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", label, m.Waiting)
	metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", label, m.KVCacheUsage)
	metric("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig.",
		fmt.Sprintf("{block_size=\"%d\",num_gpu_blocks=\"%d\"}", m.BlockSize, m.NumGPUBlocks), 1)
	metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", label, m.PrefixCacheQueries)
	metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", label, m.PrefixCacheHits)
	metric("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", label, m.Preemptions)
	// Output is always max_tokens long, so generating requests finish by length; embeddings
	// stop once their prompt is computed, as vLLM's pooling requests do.
	stop, length := s.finishedByReason()
	name := "vllm:request_success_total"
	fmt.Fprintf(&b, "# HELP %s Count of successfully processed requests.\n# TYPE %s counter\n", name, name)
	fmt.Fprintf(&b, "%s{finished_reason=\"stop\",model_name=%q} %d\n", name, s.model, stop)
	fmt.Fprintf(&b, "%s{finished_reason=\"length\",model_name=%q} %d\n", name, s.model, length)
	// Prefill/decode disaggregation, in the emulator's own namespace: vLLM exports no such counts.
	pd := s.PD()
	metric("foresight_emulator_pd_prefill_requests_total", "counter",
		"Prefill halves of disaggregated requests (kv_transfer_params.do_remote_decode) the engine accepted.", label, pd.Prefills)
	metric("foresight_emulator_pd_decode_requests_total", "counter",
		"Decode halves of disaggregated requests (kv_transfer_params.do_remote_prefill) the engine accepted: it pulls their prompt KV.", label, pd.Decodes)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}
