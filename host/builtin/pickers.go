package builtin

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// RoundRobinPickerType is the type of RoundRobinPicker.
const RoundRobinPickerType = "round-robin-picker"

// MaxScorePickerType is the type of MaxScorePicker, also the picker fallback.
const MaxScorePickerType = "max-score-picker"

var (
	_ sdk.Picker = (*RoundRobinPicker)(nil)
	_ sdk.Picker = (*MaxScorePicker)(nil)
)

// RoundRobinPicker ignores scores and rotates: each Pick starts one endpoint further along and
// wraps around. Its order depends on how many Picks came before, not on the cycle alone, so it is
// a baseline, not a replayable stage. The decisions of each hop of a disaggregated request
// (sdk.Hop) rotate on their own, so that a request's decode and prefill decisions, taken one after
// the other, do not land on the same turn of one rotation. It has no parameters and is safe for
// concurrent use.
type RoundRobinPicker struct {
	next [3]atomic.Uint64 // by hop
}

// NewRoundRobinPicker returns a round-robin picker whose first Pick starts at index 0.
func NewRoundRobinPicker() *RoundRobinPicker { return &RoundRobinPicker{} }

// Type returns "round-robin-picker".
func (p *RoundRobinPicker) Type() string { return RoundRobinPickerType }

// Description returns one line saying what the picker does.
func (p *RoundRobinPicker) Description() string {
	return "orders endpoints round robin from an offset that advances on every pick, ignoring scores"
}

// Configure accepts only empty parameters.
func (p *RoundRobinPicker) Configure(params []byte) error { return configureNone(params) }

// Pick returns every index of c.Endpoints, starting at k mod n for the k-th Pick of the cycle's
// hop (counting from 0) and wrapping around: k=1, n=3 gives [1 2 0].
func (p *RoundRobinPicker) Pick(_ context.Context, c *sdk.Cycle, scores []float64) ([]int, error) {
	if err := checkScores(c, scores); err != nil {
		return nil, err
	}
	hop := min(max(int(c.Request.Disaggregation.Hop), 0), len(p.next)-1)
	k := p.next[hop].Add(1) - 1
	n := len(c.Endpoints)
	order := make([]int, n)
	if n == 0 {
		return order, nil
	}
	start := int(k % uint64(n))
	for i := range order {
		order[i] = (start + i) % n
	}
	return order, nil
}

// MaxScorePicker orders endpoints by score, best first; equal scores are ordered at random from
// sdk.Rand(c, MaxScorePickerType), so tied endpoints share the load and the same cycle gives the
// same order (heuristics.RankByScore). A NaN score counts as −Inf and ranks last; +Inf ranks
// first. It has no parameters.
type MaxScorePicker struct{}

// NewMaxScorePicker returns a max-score picker.
func NewMaxScorePicker() *MaxScorePicker { return &MaxScorePicker{} }

// Type returns "max-score-picker".
func (p *MaxScorePicker) Type() string { return MaxScorePickerType }

// Description returns one line saying what the picker does.
func (p *MaxScorePicker) Description() string {
	return "orders endpoints by score, best first, breaking ties at random from the cycle seed"
}

// Configure accepts only empty parameters.
func (p *MaxScorePicker) Configure(params []byte) error { return configureNone(params) }

// Pick returns every index of c.Endpoints sorted by score, descending, ties in random order.
func (p *MaxScorePicker) Pick(_ context.Context, c *sdk.Cycle, scores []float64) ([]int, error) {
	if err := checkScores(c, scores); err != nil {
		return nil, err
	}
	return heuristics.RankByScore(scores, sdk.Rand(c, MaxScorePickerType)), nil
}

// checkScores returns an error unless c is set and has exactly one score per endpoint.
func checkScores(c *sdk.Cycle, scores []float64) error {
	if err := checkCycle("picking", c); err != nil {
		return err
	}
	if len(scores) != len(c.Endpoints) {
		return fmt.Errorf("picking: got %d scores for %d endpoints, want one per endpoint", len(scores), len(c.Endpoints))
	}
	return nil
}
