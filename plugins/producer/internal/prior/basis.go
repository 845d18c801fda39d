package prior

import "github.com/foresight-router/foresight/plugins/sdk"

// The analytical model's terms. Every term is a size or a load that can only add latency, so
// its coefficient is non-negative; a term an engine does not have (queueing on an engine that
// never queues, say) gets a zero coefficient from the data.
//
// TTFT ≈ a                                  fixed overhead of a request
//   - b · uncached                          computing the prompt not in the prefix cache
//   - c · prefill_in_flight                 prompt tokens dispatched there and not yet at first
//     token: computed before or alongside this one (a batch engine's chunked prefill)
//   - d · uncached · in_flight              prefill slowed by every request running beside it (a
//     slot engine's f(n) applied to the prompt, a batch engine's shared steps)
//   - e · in_flight                         decode steps interleaved with the prefill
//   - g · waiting · remaining_per_request   waiting for a place: the queue ahead times how long a
//     running request still holds its place (its remaining output tokens)
//   - h · decode_in_flight                  output tokens left there: work the engine still does
//   - i · waiting                           the queue ahead, each request a prefill to wait out
//   - j · kv_transfer                         the uncached prompt pulled as KV from a prefill
//     endpoint, for the decode hop of a disaggregated request (whose uncached term is then 0)
//
// TPOT ≈ a + b · in_flight + c · prefill_in_flight + d · input_tokens + e · decode_in_flight +
// f · kv_cache_usage: a decode step's cost grows with the batch, with prefill chunks scheduled
// into it, with the request's own context, and with the KV cache the step reads.
var (
	TTFTTerms = [...]string{"1", "uncached_tokens", "prefill_tokens_in_flight", "uncached_x_in_flight",
		"in_flight", "waiting_x_remaining_per_request", "decode_tokens_in_flight", "waiting", "kv_transfer_tokens"}
	TPOTTerms = [...]string{"1", "in_flight", "prefill_tokens_in_flight", "input_tokens", "decode_tokens_in_flight",
		"kv_cache_usage"}
)

// maxTerms is the longer of the two targets' terms: the size of a row of either.
const maxTerms = max(len(TTFTTerms), len(TPOTTerms))

// ttftRow writes the TTFT terms of r on endpoint id in state s into dst (len(TTFTTerms)).
func ttftRow(dst []float64, r *sdk.Request, id string, s *sdk.EndpointState) {
	p := min(max(s.PrefixMatch, 0), 1)
	uncached, transfer := (1-p)*float64(r.InputTokens), 0.0
	if r.HopOn(id) == sdk.HopDecode {
		uncached, transfer = 0, uncached
	}
	inflight := float64(max(s.InflightRequests, 0))
	remaining := 0.0
	if inflight > 0 {
		remaining = float64(max(s.DecodeTokensInFlight, 0)) / inflight
	}
	dst[0] = 1
	dst[1] = uncached
	dst[2] = float64(max(s.PrefillTokensInFlight, 0))
	dst[3] = uncached * inflight
	dst[4] = inflight
	dst[5] = float64(max(s.Waiting, 0)) * remaining
	dst[6] = float64(max(s.DecodeTokensInFlight, 0))
	dst[7] = float64(max(s.Waiting, 0))
	dst[8] = transfer
}

// tpotRow writes the TPOT terms into dst (len(TPOTTerms)).
func tpotRow(dst []float64, r *sdk.Request, s *sdk.EndpointState) {
	dst[0] = 1
	dst[1] = float64(max(s.InflightRequests, 0))
	dst[2] = float64(max(s.PrefillTokensInFlight, 0))
	dst[3] = float64(max(r.InputTokens, 0))
	dst[4] = float64(max(s.DecodeTokensInFlight, 0))
	dst[5] = min(max(s.KVCacheUsage, 0), 1)
}
