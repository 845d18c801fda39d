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
