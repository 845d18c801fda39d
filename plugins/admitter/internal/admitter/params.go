package admitter

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// The values of the mode parameter.
const (
	// ModeHeadroom rejects a sheddable request when no endpoint meets its SLO and none is idle or
	// cold (llm-d's latency-slo-admitter).
	ModeHeadroom = "headroom"
	// ModeBudget rejects a sheddable request when its best-case predicted TTFT exceeds the TTFT
	// budget of its priority class (the predictive admission study, seed 004).
	ModeBudget = "budget"
)

// maxBudgetMs bounds a class budget: ten minutes.
const maxBudgetMs = 600_000

// Params are the admitter's parameters, decoded from JSON over DefaultParams.
type Params struct {
	// Mode is ModeHeadroom or ModeBudget.
	Mode string `json:"mode"`
	// SLOBufferFactor scales the TPOT objective before the predicted TPOT is subtracted (headroom mode).
	SLOBufferFactor float64 `json:"sloBufferFactor"`
	// ColdKVThreshold: an endpoint whose KV-cache usage is below it is cold (headroom mode); 0 disables.
	ColdKVThreshold float64 `json:"coldKVThreshold"`
	// BudgetsMs maps a sheddable priority, e.g. "-1", to its class's TTFT budget (budget mode).
	BudgetsMs Budgets `json:"budgetsMs"`
	// HeadroomMultiplier scales every budget before the comparison (budget mode).
	HeadroomMultiplier float64 `json:"headroomMultiplier"`
}

// Budgets maps a priority, as a decimal string, to a TTFT budget in milliseconds. Decoding JSON
// into Budgets replaces the whole map rather than merging into the default one.
type Budgets map[string]float64

// UnmarshalJSON decodes a JSON object into a fresh map.
func (b *Budgets) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*b = nil
		return nil
	}
	m := map[string]float64{}
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("parameter %q: want an object of priority to milliseconds, e.g. {\"-1\": 500}: %w", "budgetsMs", err)
	}
	*b = m
	return nil
}

// DefaultParams returns the defaults: headroom mode, llm-d's buffer factor 1 and cold threshold
// 0.02, and seed 004's budgets (500 ms for its "standard" class, priority −1; 300 ms for its
// "sheddable" class, priority −2) with multiplier 1.
func DefaultParams() Params {
	return Params{
		Mode:               ModeHeadroom,
		SLOBufferFactor:    1.0,
		ColdKVThreshold:    0.02,
		BudgetsMs:          Budgets{"-1": 500, "-2": 300},
		HeadroomMultiplier: 1.0,
	}
}

// Validate checks every parameter against its accepted range.
func (p *Params) Validate() error {
	if err := sdk.CheckOneOf("mode", p.Mode, ModeHeadroom, ModeBudget); err != nil {
		return err
	}
	if err := sdk.CheckRangeOpenLow("sloBufferFactor", p.SLOBufferFactor, 0, 10); err != nil {
		return err
	}
	if err := sdk.CheckRange("coldKVThreshold", p.ColdKVThreshold, 0, 1); err != nil {
		return err
	}
	if err := sdk.CheckRange("headroomMultiplier", p.HeadroomMultiplier, 0.5, 3); err != nil {
		return err
	}
	_, err := p.BudgetsMs.classes()
	return err
}

// class is one parsed entry of Budgets.
type class struct {
	priority int32
	budgetMs float64
}

// classes parses and checks the budgets: every key a negative int32, every budget in
// (0, maxBudgetMs]. The result is sorted by priority, most important first.
func (b Budgets) classes() ([]class, error) {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]class, 0, len(b))
	for _, k := range keys {
		prio, err := strconv.ParseInt(k, 10, 32)
		if err != nil || prio >= 0 {
			return nil, fmt.Errorf("parameter %q: key %q must be a negative integer priority, e.g. \"-1\"", "budgetsMs", k)
		}
		v := b[k]
		if math.IsNaN(v) || v <= 0 || v > maxBudgetMs {
			return nil, fmt.Errorf("parameter %q: budget of priority %s must be in (0, %d] ms, got %g", "budgetsMs", k, maxBudgetMs, v)
		}
		out = append(out, class{priority: int32(prio), budgetMs: v})
	}
	slices.SortFunc(out, func(x, y class) int { return cmp.Compare(y.priority, x.priority) })
	return out, nil
}

// budgetFor returns the class whose budget applies to priority: its own entry, else the nearest
// listed priority, the lower one on a tie. ok is false when b is empty. b must have passed
// Validate (Configure checks it), so every entry parses.
func (b Budgets) budgetFor(priority int32) (c class, ok bool) {
	classes, _ := b.classes()
	best := int64(math.MaxInt64)
	for _, cl := range classes { // most important first, so a later equal distance is the lower priority
		d := int64(cl.priority) - int64(priority)
		if d < 0 {
			d = -d
		}
		if d <= best {
			c, best, ok = cl, d, true
		}
	}
	return c, ok
}
