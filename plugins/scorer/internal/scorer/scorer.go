// Package scorer implements the latency-scorer: it rates endpoints by their predicted TTFT and
// TPOT, against the request's SLO when it has one, following llm-d's latency scorer.
package scorer

import (
	"context"
	"errors"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Type is the plugin type, as declared in a pipeline config.
const Type = "latency-scorer"

// Scorer is the latency scorer. Its Configure (from sdk.Params) replaces the parameters with params
// merged over DefaultParams; on error the previous parameters stay in force. It is safe to call
// while Score runs. The zero value is not usable; call New.
type Scorer struct {
	params
}

// params is the embedded parameter holder, named by an alias so that its field does not clash
// with the Params method.
type params = sdk.Params[Params]

var _ sdk.Scorer = (*Scorer)(nil)

// New returns a scorer configured with DefaultParams.
func New() *Scorer {
	s := &Scorer{}
	s.Init(DefaultParams)
	return s
}

// Type returns "latency-scorer".
func (s *Scorer) Type() string { return Type }

// Description says in one line what the scorer does.
func (s *Scorer) Description() string {
	return "scores endpoints by predicted TTFT/TPOT headroom against the request SLO, or by predicted latency without one"
}

// Params returns a copy of the parameters in force.
func (s *Scorer) Params() Params { return *s.Get() }

// Score returns one score in [0, 1] per endpoint of c, in order; see the package README for the
// algorithm. It reads nothing but c and the parameters, so the same cycle gives the same scores.
func (s *Scorer) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	if c == nil {
		return nil, errors.New("scoring: nil cycle")
	}
	return score(c, s.Get()), nil
}

// Reads declares the cycle fields the scorer reads (sdk.Reader), so the host sends only those.
func (s *Scorer) Reads() []string {
	return []string{"request", "endpoints.ids", "endpoints.states.kv_cache_usage", "endpoints.states.waiting", "endpoints.states.dispatched_since_scrape", "endpoints.states.prefix_match", "endpoints.states.inflight_requests", "endpoints.states.min_running_tpot_slo_ms", "endpoints.states.running_tpot_ms", "endpoints.predictions"}
}
