// Package features turns a request and an endpoint's state into the TTFT and TPOT models' feature
// vectors. The host fills the state at dispatch and sends it back with the observed latencies, so
// training and serving read the very same numbers (no train/serve skew).
package features

import (
	"math"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// TTFT are the TTFT model's features, in column order (after llm-d's latency predictor, plus
// decode tokens in flight, which llm-d always sends as 0):
//
//	is_queued                 1 when the engine had requests waiting at the last scrape
//	kv_cache_usage            the engine's KV-cache utilisation in [0, 1]
//	input_tokens              the prompt's length
//	waiting                   the engine's queue at the last scrape
//	running                   the router's requests in flight there (fresh, unlike the gauge)
//	prefill_tokens_in_flight  uncached prompt tokens dispatched there and not yet at first token
//	decode_tokens_in_flight   output tokens still to generate there
//	prefix_match              the fraction of the prompt believed cached there
//	effective_input_tokens    (1 − prefix_match)·input_tokens: the prompt left to compute
//	prefix_bucket             ⌊4·prefix_match⌋, the store's prefix stratum
//	last_output_age_ms        ms since the router last saw output there (−1: nothing in flight):
//	                          where the engine is in its current step, which a new request waits out
//	prefill_tokens_ahead      prefill_tokens_in_flight + effective_input_tokens: every prompt token
//	                          the engine computes before this request's first token (a sum that
//	                          shallow trees would otherwise approximate split by split)
//	kv_transfer_tokens        the prompt tokens the endpoint pulls as KV from a prefill endpoint
//	                          instead of computing them: (1 − prefix_match)·input_tokens for the
//	                          decode hop of a disaggregated request, whose effective_input_tokens
//	                          is then 0; 0 for every other request
var TTFT = []string{"is_queued", "kv_cache_usage", "input_tokens", "waiting", "running",
	"prefill_tokens_in_flight", "decode_tokens_in_flight", "prefix_match", "effective_input_tokens", "prefix_bucket",
	"last_output_age_ms", "prefill_tokens_ahead", "kv_transfer_tokens"}

// TPOT are the TPOT model's features, in column order: the load an output token is generated
// under (the first seven TTFT features), and
//
//	max_output_tokens         the request's max_tokens (0 when the client set none): how many
//	                          steps the prefill work that arrives while it decodes is spread over
var TPOT = append(slices.Clip(TTFT[:7]), "max_output_tokens")

// TTFTMonotone and TPOTMonotone are the direction each feature can move the latency in, column
// by column (+1 up as it grows, −1 down, 0 either): a load, a size or a queue can only add
// latency, a cached prefix only take it away. The trees are held to them (the producer's
// monotone parameter), so that a prediction never says that more load makes a server faster,
// whatever the samples' load happened to go with under the router that chose them.
// last_output_age_ms and max_output_tokens are free.
var (
	TTFTMonotone = []int8{1, 1, 1, 1, 1, 1, 1, -1, 1, -1, 0, 1, 1}
	TPOTMonotone = []int8{1, 1, 1, 1, 1, 1, 1, 0}
)

// FillTTFT writes the TTFT features of r on endpoint id in state s into dst, which must have
// len(TTFT) elements. What the endpoint would serve of r (sdk.Request.HopOn) decides whether it
// computes the uncached prompt or pulls it as KV.
func FillTTFT(dst []float64, r *sdk.Request, id string, s *sdk.EndpointState) {
	fillLoad(dst, r, s)
	p := min(max(s.PrefixMatch, 0), 1)
	uncached := (1 - p) * float64(r.InputTokens)
	dst[7] = p
	dst[8], dst[12] = uncached, 0
	if r.HopOn(id) == sdk.HopDecode {
		dst[8], dst[12] = 0, uncached
	}
	dst[9] = math.Floor(4 * p)
	dst[10] = s.LastOutputAgeMs
	dst[11] = dst[5] + dst[8] // prefill_tokens_in_flight + effective_input_tokens
}

// FillTPOT writes the TPOT features of r on endpoint id into dst, which must have len(TPOT)
// elements. A decode hop's tokens are generated as a whole request's are: TPOT reads no hop.
func FillTPOT(dst []float64, r *sdk.Request, _ string, s *sdk.EndpointState) {
	fillLoad(dst, r, s)
	dst[7] = float64(max(r.MaxOutputTokens, 0))
}

func fillLoad(dst []float64, r *sdk.Request, s *sdk.EndpointState) {
	queued := 0.0
	if s.Waiting > 0 {
		queued = 1
	}
	dst[0] = queued
	dst[1] = s.KVCacheUsage
	dst[2] = float64(r.InputTokens)
	dst[3] = float64(s.Waiting)
	dst[4] = float64(s.InflightRequests)
	dst[5] = float64(s.PrefillTokensInFlight)
	dst[6] = float64(s.DecodeTokensInFlight)
}
