package predictor

import "github.com/foresight-router/foresight/plugins/sdk"

// weighsPlacement reports whether a cycle outside a round gets after-predictions too: when its
// request or a request running on one of its endpoints has a latency objective, a scorer may
// weigh what the placement costs the requests running there (their TPOT rises with it), and the
// after-predictions are what says it. Other cycles keep the cost of predicting once.
func weighsPlacement(c *sdk.Cycle) bool {
	if c.Request.SLO.Any() {
		return true
	}
	for i := range c.Endpoints {
		if c.Endpoints[i].State.MinRunningTPOTSLOMs > 0 {
			return true
		}
	}
	return false
}

// withPlaced returns c's endpoints followed by a copy of each as sdk.PlaceOn(c, i, 1) leaves it,
// the states a round's after-predictions are made on. Every input of a prediction (the trees'
// features, the prior's terms and speed factor, the cold-start profile) reads the request and one
// endpoint's own state and ID, nothing relative to the other endpoints, so placing every endpoint
// once in one copy gives each endpoint's after-prediction exactly as a copy with only that
// endpoint placed would, and one batch over both halves predicts both.
func withPlaced(c *sdk.Cycle) []sdk.Endpoint {
	n := len(c.Endpoints)
	all := make([]sdk.Endpoint, 2*n)
	copy(all, c.Endpoints)
	copy(all[n:], c.Endpoints)
	placed := sdk.Cycle{Request: c.Request, Endpoints: all[n:]}
	for i := range n {
		sdk.PlaceOn(&placed, i, 1)
	}
	return all
}

// boundPrefillRise bounds the prior's TPOT after a placement (base[len(eps)/2+i] for endpoint i) by
// what the placed request's prefill can physically do to a request running there. The prior
// learned how the prefill in flight at dispatch went with the TPOT a request then saw, and a
// large prefill in flight marks a burst whose later arrivals slowed that request too, so its
// coefficient overstates what one prompt does. A prefill that takes W ms of the engine delays a
// running request by at most W, spread over the tokens it has left (on average the decode tokens
// in flight per request in flight). So the after-TPOT is at most the prior on the placed state
// with the prefill in flight as it was, plus W over those tokens. W is the prior's TTFT term in
// the request's uncached tokens (prior.Snapshot.PrefillMs). Nothing bounds an endpoint without
// decode tokens in flight: nothing runs there that a placement could cost.
func boundPrefillRise(r *sdk.Request, eps []sdk.Endpoint, base []float64, s *serving) {
	n := len(eps) / 2
	for i := range n {
		st := &eps[i].State
		if st.InflightRequests <= 0 || st.DecodeTokensInFlight <= 0 {
			continue
		}
		kind := s.kindOf(&eps[i])
		without := eps[n+i].State
		without.PrefillTokensInFlight = st.PrefillTokensInFlight
		_, rest := s.prior.Predict(r, eps[i].ID, kind, &without)
		perRequest := float64(st.DecodeTokensInFlight) / float64(st.InflightRequests)
		base[n+i] = min(base[n+i], rest+s.prior.PrefillMs(r, eps[i].ID, kind, st)/perRequest)
	}
}
