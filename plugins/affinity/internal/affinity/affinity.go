// Package affinity implements the prefix-cache-affinity-filter: an epsilon-greedy gate that narrows
// the candidates to cache-warm ("sticky") endpoints unless doing so would cost too much TTFT.
package affinity

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// Type is the plugin type declared in the host configuration.
const Type = "prefix-cache-affinity-filter"

// Params are the filter's parameters, decoded from JSON over Defaults.
type Params struct {
	// AffinityThreshold is the prefix match at or above which an endpoint is sticky, in [0, 1].
	AffinityThreshold float64 `json:"affinityThreshold"`
	// ExplorationProbability is the chance, in [0, 1], that a cycle bypasses the filter entirely.
	ExplorationProbability float64 `json:"explorationProbability"`
	// MaxTTFTPenaltyMs is how much worse the best sticky predicted TTFT may be than the best
	// non-sticky one before affinity is broken, in [0, 1e7] milliseconds.
	MaxTTFTPenaltyMs float64 `json:"maxTTFTPenaltyMs"`
}

// Defaults returns llm-d's defaults: threshold 0.80, no exploration, 5000 ms penalty.
func Defaults() Params {
	return Params{AffinityThreshold: 0.80, ExplorationProbability: 0, MaxTTFTPenaltyMs: 5000}
}

// Validate returns an error naming the first parameter outside its range.
func (p *Params) Validate() error {
	if err := sdk.CheckRange("affinityThreshold", p.AffinityThreshold, 0, 1); err != nil {
		return err
	}
	if err := sdk.CheckRange("explorationProbability", p.ExplorationProbability, 0, 1); err != nil {
		return err
	}
	return sdk.CheckRange("maxTTFTPenaltyMs", p.MaxTTFTPenaltyMs, 0, 1e7)
}

// Filter is the prefix-cache-affinity-filter. Its Configure (from sdk.Params) merges params over
// Defaults, validates them and swaps them in atomically, so it is safe against concurrent Filter
// calls; on error the previous parameters stay in force. The zero value is not usable; call New.
type Filter struct {
	sdk.Params[Params]
}

var _ sdk.Filter = (*Filter)(nil)

// New returns a filter configured with Defaults.
func New() *Filter {
	f := &Filter{}
	f.Init(Defaults)
	return f
}

// Type returns "prefix-cache-affinity-filter".
func (f *Filter) Type() string { return Type }

// Description returns one line saying what the filter does.
func (f *Filter) Description() string {
	return "keeps cache-warm endpoints (prefix match >= threshold) unless their predicted TTFT is too much worse; explores with a small probability"
}

// Filter keeps every endpoint when there is at most one, when the cycle explores, when none is
// sticky, when all are sticky, or when the best sticky predicted TTFT exceeds the best non-sticky
// one by more than MaxTTFTPenaltyMs; otherwise it keeps the sticky endpoints. An endpoint without a
// valid prediction counts as +Inf TTFT; when no endpoint has one the sticky endpoints are kept,
// since the gate has nothing to compare and the cache match is the only signal left.
func (f *Filter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	if c == nil {
		return sdk.FilterVerdict{}, errors.New("filtering: nil cycle")
	}
	n := len(c.Endpoints)
	if n <= 1 {
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: fmt.Sprintf("%d endpoint(s), nothing to narrow", n)}, nil
	}
	p := f.Get()
	if p.ExplorationProbability > 0 && sdk.Rand(c, Type).Float64() < p.ExplorationProbability {
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: "explore"}, nil
	}
	var sticky []int
	bestSticky, bestOther := math.Inf(1), math.Inf(1)
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		if e.State.PrefixMatch >= p.AffinityThreshold {
			sticky = append(sticky, i)
			bestSticky = math.Min(bestSticky, ttft(e))
		} else {
			bestOther = math.Min(bestOther, ttft(e))
		}
	}
	switch {
	case len(sticky) == 0:
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: "no sticky endpoint with prefix >= " + ratio(p.AffinityThreshold)}, nil
	case len(sticky) == n:
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: fmt.Sprintf("all %d endpoints sticky", n)}, nil
	case bestSticky > bestOther+p.MaxTTFTPenaltyMs:
		// +Inf > +Inf is false: with no prediction on either side the sticky endpoints stay.
		return sdk.FilterVerdict{Kept: heuristics.AllIndices(n), Reason: fmt.Sprintf("ttft penalty: sticky best %s vs %s",
			millis(bestSticky), millis(bestOther))}, nil
	}
	return sdk.FilterVerdict{Kept: sticky, Reason: fmt.Sprintf("sticky: %d of %d with prefix >= %s",
		len(sticky), n, ratio(p.AffinityThreshold))}, nil
}

// ttft returns the endpoint's predicted TTFT, or +Inf when it has no valid prediction.
func ttft(e *sdk.Endpoint) float64 {
	if !e.Prediction.Valid {
		return math.Inf(1)
	}
	return e.Prediction.TTFTMs
}

// millis formats a TTFT for a reason, "no prediction" for +Inf.
func millis(v float64) string {
	if math.IsInf(v, 1) {
		return "no prediction"
	}
	return fmt.Sprintf("%.0fms", v)
}

// ratio formats a threshold with two decimals ("0.80"), or in full when two would round it.
func ratio(v float64) string {
	if math.Round(v*100)/100 == v {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%g", v)
}

// Reads declares the cycle fields the filter reads (sdk.Reader), so the host sends only those.
func (f *Filter) Reads() []string {
	return []string{"endpoints.states.prefix_match", "endpoints.predictions"}
}
