package predictor

import "github.com/foresight-router/foresight/plugins/sdk"

// Disaggregated requests. The trees and the prior predict what an endpoint itself does with the
// part of the request it would serve (sdk.Request.HopOn): the decode hop's TTFT is its KV
// transfer and first step (the kv_transfer_tokens feature), the prefill hop's the prompt's
// computation, the whole request's as ever. A prefill cycle then compares candidates that would
// serve the request differently: a prefill endpoint serves only the first hop, and the client's
// first token comes after the decode hop's too; the decode endpoint itself would serve it whole.
// So a prefill endpoint's predictions are made the client's: its TTFT plus the decode hop's
// predicted TTFT, and the decode hop's TPOT, which is where the tokens are generated.

// asClientSees adds the decode hop to the predictions of c's prefill endpoints, when c is a
// prefill cycle whose decode hop was predicted.
func asClientSees(c *sdk.Cycle, out []sdk.Prediction) {
	d := &c.Request.Disaggregation
	if d.Hop != sdk.HopPrefill || !(d.DecodeTTFTMs > 0) {
		return
	}
	for i := range out {
		if c.Request.HopOn(c.Endpoints[i].ID) != sdk.HopPrefill || !out[i].Valid {
			continue
		}
		p := &out[i]
		p.TTFTMs += d.DecodeTTFTMs
		if p.TTFTAfterMs > 0 {
			p.TTFTAfterMs += d.DecodeTTFTMs
		}
		if d.DecodeTPOTMs > 0 { // a prefill placed here does not slow the decode endpoint's tokens
			p.TPOTMs, p.TPOTAfterMs = d.DecodeTPOTMs, 0
			if p.TTFTAfterMs > 0 {
				p.TPOTAfterMs = d.DecodeTPOTMs
			}
		}
	}
}

// prefillHop reports whether s is a prefill hop's: its answer is its first token, whether the
// client streams or not.
func prefillHop(s *sdk.Sample) bool { return s.Request.HopOn(s.EndpointID) == sdk.HopPrefill }

// ownShare returns s with its prediction as the endpoint's own: a prefill hop's sample carries
// the prediction asClientSees made, the decode hop's TTFT added, which the hop's measured latency
// does not include.
func ownShare(s *sdk.Sample) {
	if !prefillHop(s) || !s.Predicted.Valid {
		return
	}
	d := &s.Request.Disaggregation
	s.Predicted.TTFTMs = max(s.Predicted.TTFTMs-d.DecodeTTFTMs, minPredictionMs)
	s.Predicted.TPOTMs = 0
}
