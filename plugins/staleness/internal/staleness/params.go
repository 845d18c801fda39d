package staleness

import "github.com/foresight-router/foresight/plugins/sdk"

// Params are the filter's parameters, decoded from JSON over Defaults.
type Params struct {
	// MaxMetricsAgeMs is the oldest state, in ms since its scrape, an endpoint may be chosen on,
	// in [1, 600000].
	MaxMetricsAgeMs float64 `json:"maxMetricsAgeMs"`
}

// Defaults allow 1 s: twenty of the router's 50 ms scrape intervals. A scrape that fails three
// times in a row already takes the endpoint out of the rotation; what this catches is the
// exporter that still answers, late, while the engine's queue moves on.
func Defaults() Params { return Params{MaxMetricsAgeMs: 1000} }

// Validate returns an error naming a parameter outside its accepted range.
func (p *Params) Validate() error {
	return sdk.CheckRange("maxMetricsAgeMs", p.MaxMetricsAgeMs, 1, 600_000)
}
