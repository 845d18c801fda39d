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
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// The values of the mode parameter.
const (
	// ModeHeadroom rejects a sheddable request when no endpoint meets its SLO and none is idle or
	// cold (llm-d's latency-slo-admitter).
	ModeHeadroom = "headroom"
	// ModeBudget rejects a sheddable request when its best-case predicted TTFT exceeds the TTFT
	// budget of its priority class (the predictive admission study, seed 004).
	ModeBudget = "budget"
	// ModeQueueDepth rejects a sheddable request when the queue (of the busiest endpoint, or of
	// the least busy one) has reached the bound of its priority class (the study's SLO-gated
	// admission, its iteration 11).
	ModeQueueDepth = "queue-depth"
)

// The values of the queueOf parameter: which endpoint's queue the queue-depth mode gates on.
const (
	// QueueOfMax is the longest queue in the fleet: the study's cluster-wide maxQueueDepth.
	QueueOfMax = "max"
	// QueueOfMin is the shortest queue: the best endpoint the request could be sent to.
	QueueOfMin = "min"
)

const (
	// maxBudgetMs bounds a class budget: ten minutes.
	maxBudgetMs = 600_000
	// maxQueueBound bounds a class's queue bound: more than any engine's max_num_seqs.
	maxQueueBound = 100_000
	// maxGroupWindowMs bounds prefixGroupWindowMs: an hour.
	maxGroupWindowMs = 3_600_000
)

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
	// QueueSource is the queue signal of queue-depth mode: heuristics.QueueWaiting (the engine's
	// waiting queue plus the dispatches since its scrape) or heuristics.QueueInflight.
	QueueSource string `json:"queueSource"`
	// QueueOf is QueueOfMax or QueueOfMin (queue-depth mode).
	QueueOf string `json:"queueOf"`
	// QueueBounds maps a sheddable priority, e.g. "-1", to the queue length at which its
	// requests are shed (queue-depth mode).
	QueueBounds Bounds `json:"queueBounds"`
	// PrefixGroupFloor is the least share of a prefix group's requests admitted over the last
	// PrefixGroupWindowMs (every mode; 0 disables): a request the mode would shed is admitted
	// while its group is below the floor.
	PrefixGroupFloor float64 `json:"prefixGroupFloor"`
	// PrefixGroupWindowMs is the sliding window of the floor, in the cycles' time.
	PrefixGroupWindowMs float64 `json:"prefixGroupWindowMs"`
	// PrefixGroupBlocks is how deep into the prompt the group is read, in prefix blocks, in
	// [1, 1024]: requests whose first PrefixGroupBlocks blocks are the same (or whole prompt, if
	// shorter) are one group.
	PrefixGroupBlocks int `json:"prefixGroupBlocks"`
	// PrefixGroupMinRequests is how many of a group's requests, this one included, the window
	// must hold before the floor acts, in [1, 10⁶]: a share of fewer is no rate, and a prompt
	// seen once (a one-off) is not a tenant to protect.
	PrefixGroupMinRequests int `json:"prefixGroupMinRequests"`

	// parsed holds BudgetsMs and QueueBounds as Validate parsed them, so that a cycle does not
	// parse them again; nil on parameters Validate has not seen (DefaultParams).
	parsed *limits
}

// limits are the parsed budgets and queue bounds, each sorted by priority, most important first.
type limits struct{ budgets, bounds []class }

// Budgets maps a priority, as a decimal string, to a TTFT budget in milliseconds. Decoding JSON
// into Budgets replaces the whole map rather than merging into the default one.
type Budgets map[string]float64

// UnmarshalJSON decodes a JSON object into a fresh map.
func (b *Budgets) UnmarshalJSON(data []byte) error {
	m, err := freshMap(data, "budgetsMs", `milliseconds, e.g. {"-1": 500}`)
	*b = m
	return err
}

// Bounds maps a priority, as a decimal string, to a queue length. Decoding JSON into Bounds
// replaces the whole map rather than merging into the default one.
type Bounds map[string]float64

// UnmarshalJSON decodes a JSON object into a fresh map.
func (b *Bounds) UnmarshalJSON(data []byte) error {
	m, err := freshMap(data, "queueBounds", `queue length, e.g. {"-1": 70}`)
	*b = m
	return err
}

// freshMap decodes data, the JSON object of parameter name, into a new map of priority to a
// number (values: what the numbers are, for the error); JSON null is a nil map.
func freshMap(data []byte, name, values string) (map[string]float64, error) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, nil
	}
	m := map[string]float64{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("parameter %q: want an object of priority to %s: %w", name, values, err)
	}
	return m, nil
}

// The study's average step time (PredictiveSLOConfig.AvgStepTime, 7 ms): its controller
// estimates a request's queue wait as queue depth × this.
const studyAvgStepMs = 7

// DefaultParams returns the defaults: headroom mode, llm-d's buffer factor 1 and cold threshold
// 0.02, and seed 004's budgets (500 ms for its "standard" class, priority −1; 300 ms for its
// "sheddable" class, priority −2) with multiplier 1. The queue bounds are those budgets turned
// into queue lengths by the study's own estimate, wait = depth × 7 ms: ⌊500/7⌋ = 71 and
// ⌊300/7⌋ = 42, gating on the busiest endpoint's waiting queue (the study's maxQueueDepth). The
// prefix group floor is off; its window is 10 s.
func DefaultParams() Params {
	return Params{
		Mode:                   ModeHeadroom,
		SLOBufferFactor:        1.0,
		ColdKVThreshold:        0.02,
		BudgetsMs:              Budgets{"-1": 500, "-2": 300},
		HeadroomMultiplier:     1.0,
		QueueSource:            heuristics.QueueWaiting,
		QueueOf:                QueueOfMax,
		QueueBounds:            Bounds{"-1": 500 / studyAvgStepMs, "-2": 300 / studyAvgStepMs},
		PrefixGroupWindowMs:    10_000,
		PrefixGroupBlocks:      8,
		PrefixGroupMinRequests: 10,
	}
}

// Validate checks every parameter against its accepted range.
func (p *Params) Validate() error {
	if err := sdk.CheckOneOf("mode", p.Mode, ModeHeadroom, ModeBudget, ModeQueueDepth); err != nil {
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
	if err := sdk.CheckOneOf("queueSource", p.QueueSource, heuristics.QueueWaiting, heuristics.QueueInflight); err != nil {
		return err
	}
	if err := sdk.CheckOneOf("queueOf", p.QueueOf, QueueOfMax, QueueOfMin); err != nil {
		return err
	}
	if err := sdk.CheckRange("prefixGroupFloor", p.PrefixGroupFloor, 0, 1); err != nil {
		return err
	}
	if err := sdk.CheckRangeOpenLow("prefixGroupWindowMs", p.PrefixGroupWindowMs, 0, maxGroupWindowMs); err != nil {
		return err
	}
	if err := sdk.CheckRange("prefixGroupBlocks", float64(p.PrefixGroupBlocks), 1, 1024); err != nil {
		return err
	}
	if err := sdk.CheckRange("prefixGroupMinRequests", float64(p.PrefixGroupMinRequests), 1, 1e6); err != nil {
		return err
	}
	bounds, err := p.QueueBounds.classes()
	if err != nil {
		return err
	}
	budgets, err := p.BudgetsMs.classes()
	if err != nil {
		return err
	}
	p.parsed = &limits{budgets: budgets, bounds: bounds}
	return nil
}

// class is one parsed entry of Budgets or Bounds: a priority and its limit.
type class struct {
	priority int32
	limit    float64
}

// classes parses and checks the budgets: every key a negative int32, every budget in
// (0, maxBudgetMs]. The result is sorted by priority, most important first.
func (b Budgets) classes() ([]class, error) {
	return parseClasses("budgetsMs", "budget", b, maxBudgetMs, " ms", false)
}

// budgetFor returns the class whose budget applies to priority (nearestClass): from what Validate
// parsed, else (parameters it has not seen, whose entries are the defaults') parsed now.
func (p *Params) budgetFor(priority int32) (c class, ok bool) {
	if p.parsed != nil {
		return nearestClass(p.parsed.budgets, priority)
	}
	classes, _ := p.BudgetsMs.classes()
	return nearestClass(classes, priority)
}

// classes parses and checks the bounds as Budgets.classes does, every bound in
// [0, maxQueueBound] (0 sheds the class whenever the queue is not empty).
func (b Bounds) classes() ([]class, error) {
	return parseClasses("queueBounds", "queue bound", b, maxQueueBound, "", true)
}

// boundFor returns the class whose queue bound applies to priority, as budgetFor does.
func (p *Params) boundFor(priority int32) (c class, ok bool) {
	if p.parsed != nil {
		return nearestClass(p.parsed.bounds, priority)
	}
	classes, _ := p.QueueBounds.classes()
	return nearestClass(classes, priority)
}

// parseClasses parses m, the parameter name: every key a negative int32 priority, every value a
// what in (0, hi], or [0, hi] with zeroOK, shown with unit. The result is sorted by priority,
// most important first.
func parseClasses(name, what string, m map[string]float64, hi float64, unit string, zeroOK bool) ([]class, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]class, 0, len(m))
	for _, k := range keys {
		prio, err := strconv.ParseInt(k, 10, 32)
		if err != nil || prio >= 0 {
			return nil, fmt.Errorf("parameter %q: key %q must be a negative integer priority, e.g. \"-1\"", name, k)
		}
		v := m[k]
		if math.IsNaN(v) || v < 0 || (v == 0 && !zeroOK) || v > hi {
			lo := "("
			if zeroOK {
				lo = "["
			}
			return nil, fmt.Errorf("parameter %q: %s of priority %s must be in %s0, %g]%s, got %g", name, what, k, lo, hi, unit, v)
		}
		out = append(out, class{priority: int32(prio), limit: v})
	}
	slices.SortFunc(out, func(x, y class) int { return cmp.Compare(y.priority, x.priority) })
	return out, nil
}

// nearestClass returns priority's own class, else the nearest listed priority, the lower one on a
// tie. ok is false when classes is empty.
func nearestClass(classes []class, priority int32) (c class, ok bool) {
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
