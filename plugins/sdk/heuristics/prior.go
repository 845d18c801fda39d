package heuristics

import "github.com/foresight-router/foresight/plugins/sdk"

// PriorTTFTMs is a prior estimate of the request's TTFT on an endpoint, from the endpoint's state
// alone, for when no producer's prediction is at hand: the requests ahead of it in the queue
// (FreshWaiting) and the request itself reach their first token at the rate the endpoint has
// been starting the router's requests (FirstTokenRate, per second), so
//
//	TTFT ≈ 1000 · (FreshWaiting + 1) / FirstTokenRate   ms.
//
// ok is false where the endpoint has no rate yet (fewer than 16 first tokens seen there): the
// prior has nothing to turn a queue into a time with. It holds no term for the prompt's length:
// the rate counts requests, not prompt tokens, so it already averages the prompts the endpoint
// has served, and scaling it by this prompt's tokens would need a per-token rate the state does
// not carry.
func PriorTTFTMs(s *sdk.EndpointState) (ttftMs float64, ok bool) {
	if !(s.FirstTokenRate > 0) {
		return 0, false
	}
	return 1000 * float64(FreshWaiting(s)+1) / s.FirstTokenRate, true
}

// PriorPredictions returns PriorTTFTMs for every endpoint of the cycle as a prediction, Valid
// only where the prior had its inputs, with TPOT unknown (0); any reports whether one is valid.
func PriorPredictions(c *sdk.Cycle) (preds []sdk.Prediction, any bool) {
	preds = make([]sdk.Prediction, len(c.Endpoints))
	for i := range c.Endpoints {
		if ttft, ok := PriorTTFTMs(&c.Endpoints[i].State); ok {
			preds[i], any = sdk.Prediction{Valid: true, TTFTMs: ttft}, true
		}
	}
	return preds, any
}
