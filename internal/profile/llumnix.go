package profile

import "math"

// minTokensPerRequest is the least context Llumnix reads its TPOT profile at: a decode batch of
// requests averaging fewer tokens is read at 8 (predict_utils.go, predictTpotLatency).
const minTokensPerRequest = 8

// Predictor is Llumnix's latency model over a pair of profiles (its LatencyPredictor): a decode
// step costs TPOT(batch, tokens per request), and a prefill is cut into chunks of at most
// MaxNumBatchedTokens tokens, each a step that costs TTFT(chunk) plus the decode step running
// beside it (chunked prefill: the decode batch rides along with every prefill chunk).
type Predictor struct {
	TTFT *TTFT
	TPOT *TPOT
	// MaxNumBatchedTokens is the step's token budget; 0: the engine prefills a prompt whole.
	MaxNumBatchedTokens float64
}

// DecodeStep is the time of one decode step of reqs requests holding tokens tokens between them;
// 0 without a decode batch.
func (p Predictor) DecodeStep(reqs, tokens float64) float64 {
	if reqs <= 0 || tokens <= 0 {
		return 0
	}
	return p.TPOT.Predict(reqs, max(tokens/reqs, minTokensPerRequest))
}

// Prefill is the time to compute prefill uncached prompt tokens beside a decode batch of
// decodeReqs requests holding decodeTokens tokens: ⌈prefill / budget⌉ steps, each the chunk's
// TTFT plus a decode step. Unlike Llumnix, a prefill of no tokens (a prompt the engine holds
// whole) still takes one step of the shortest profiled prefill: the engine computes its last
// token to emit the first one.
func (p Predictor) Prefill(prefill, decodeReqs, decodeTokens float64) float64 {
	prefill = max(prefill, 1)
	step := p.DecodeStep(decodeReqs, decodeTokens)
	budget := p.MaxNumBatchedTokens
	if budget <= 0 || prefill <= budget {
		return p.TTFT.Predict(prefill) + step
	}
	full := math.Floor(prefill / budget)
	total := full * (p.TTFT.Predict(budget) + step)
	if rest := prefill - full*budget; rest > 0 {
		total += p.TTFT.Predict(rest) + step
	}
	return total
}
