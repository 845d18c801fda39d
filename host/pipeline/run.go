package pipeline

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Run schedules one cycle and returns its trace. It never fails: a stage that errs, times out or
// is down is replaced by its fallback (producer → no predictions, filter → keep all, scorer →
// composite, admitter → admit, picker → max-score), which the trace records. c is not modified.
func (p *Pipeline) Run(ctx context.Context, c *sdk.Cycle) *Trace {
	began := time.Now()
	t := &Trace{RequestID: c.Request.ID, Seed: c.Seed, Now: c.Now, Admitted: true}
	cur := &sdk.Cycle{Request: c.Request, Endpoints: slices.Clone(c.Endpoints), Now: c.Now, Seed: c.Seed}
	if p.producer != nil {
		cur.Seal()
		t.Producer = p.produce(ctx, cur)
	}
	cur.Seal()
	t.Candidates = cur.Endpoints

	var admitted sync.WaitGroup
	if p.admitter != nil {
		admitted.Add(1)
		produced := cur // the filters below move cur on; the admitter sees every candidate
		go func() { defer admitted.Done(); t.Admitter = p.admit(ctx, produced) }()
	}

	idx := sdk.AllIndices(len(cur.Endpoints)) // positions in t.Candidates
	for _, f := range p.filters {
		if len(idx) == 0 {
			break
		}
		st, keep := p.filter(ctx, f, cur)
		idx = pick(idx, keep)
		st.Kept = idx
		t.Filters = append(t.Filters, st)
		if len(keep) != len(cur.Endpoints) {
			cur = subset(cur, keep)
			cur.Seal()
		}
		if len(idx) == 0 {
			t.Reason = "filter " + f.name + " kept no endpoint"
		}
	}
	if len(c.Endpoints) == 0 {
		t.Reason = "no endpoints"
	}
	if len(idx) > 0 {
		t.Scored = idx
		t.Scorers, t.Scores = p.score(ctx, cur)
		var order []int
		t.Picker, order = p.pickOrder(ctx, cur, t.Scores)
		t.Order = pick(idx, order)
		t.Picker.Order = t.Order
	}
	admitted.Wait()
	if t.Admitter != nil && !t.Admitter.Admitted {
		t.Admitted, t.Reason = false, t.Admitter.Reason
	}
	t.Duration = time.Since(began)
	return t
}

// pick maps positions in the current cycle back to candidate positions.
func pick(idx, positions []int) []int {
	out := make([]int, len(positions))
	for i, k := range positions {
		out[i] = idx[k]
	}
	return out
}

func stageTrace(s *slot, began time.Time) StageTrace {
	return StageTrace{Stage: s.stage, Plugin: s.name, Type: s.typ, Weight: s.weight, Duration: time.Since(began)}
}

func (p *Pipeline) produce(ctx context.Context, c *sdk.Cycle) *StageTrace {
	began := time.Now()
	preds, err := call(ctx, p.producer.slot, p.producer.co, c)
	st := stageTrace(p.producer.slot, began)
	if err == nil && len(preds) != len(c.Endpoints) {
		err = errAnswerSize
	}
	if err != nil {
		st.Fallback = p.producer.failed(err)
		for i := range c.Endpoints {
			c.Endpoints[i].Prediction = sdk.Prediction{}
		}
		return &st
	}
	for i := range c.Endpoints {
		c.Endpoints[i].Prediction = preds[i]
	}
	return &st
}

func (p *Pipeline) admit(ctx context.Context, c *sdk.Cycle) *StageTrace {
	began := time.Now()
	v, err := call(ctx, p.admitter.slot, p.admitter.co, c)
	st := stageTrace(p.admitter.slot, began)
	if err != nil {
		st.Fallback = p.admitter.failed(err)
		v = sdk.AdmitVerdict{Admitted: true, Reason: "admitted by fallback"}
	}
	st.Admitted, st.Reason = v.Admitted, v.Reason
	return &st
}

// filter returns the stage trace (without Kept) and the kept positions in c, deduplicated and
// ascending; a failed filter keeps everything.
func (p *Pipeline) filter(ctx context.Context, f *filterSlot, c *sdk.Cycle) (StageTrace, []int) {
	began := time.Now()
	v, err := call(ctx, f.slot, f.co, c)
	st := stageTrace(f.slot, began)
	if err == nil && !inRange(v.Kept, len(c.Endpoints)) {
		err = errIndex
	}
	if err != nil {
		st.Fallback = f.failed(err)
		return st, sdk.AllIndices(len(c.Endpoints))
	}
	st.Reason = v.Reason
	keep := slices.Clone(v.Kept)
	slices.Sort(keep)
	return st, slices.Compact(keep)
}

// score runs the scorers concurrently and returns their traces and the weighted sums.
func (p *Pipeline) score(ctx context.Context, c *sdk.Cycle) ([]StageTrace, []float64) {
	traces := make([]StageTrace, len(p.scorers))
	var wg sync.WaitGroup
	for i, s := range p.scorers {
		run := func() { traces[i] = p.scoreOne(ctx, s, c) }
		if len(p.scorers) == 1 {
			run()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
	total := make([]float64, len(c.Endpoints))
	for _, st := range traces {
		for i, v := range st.Scores {
			total[i] += st.Weight * v
		}
	}
	return traces, total
}

func (p *Pipeline) scoreOne(ctx context.Context, s *scorerSlot, c *sdk.Cycle) StageTrace {
	began := time.Now()
	scores, err := call(ctx, s.slot, s.co, c)
	st := stageTrace(s.slot, began)
	if err == nil && len(scores) != len(c.Endpoints) {
		err = errAnswerSize
	}
	if err != nil {
		st.Fallback = s.failed(err)
		scores, _ = p.fallbackScorer.Score(ctx, c)
	}
	scores = slices.Clone(scores)
	s.clampScores(scores)
	st.Scores = scores
	return st
}

// pickOrder returns the picker's trace (without Order) and its preference order over c, every
// position at most once.
func (p *Pipeline) pickOrder(ctx context.Context, c *sdk.Cycle, scores []float64) (*StageTrace, []int) {
	began := time.Now()
	if p.picker == nil {
		order, _ := p.fallbackPicker.Pick(ctx, c, scores)
		return &StageTrace{Stage: sdk.StagePicker, Plugin: "default", Type: "max-score-picker", Duration: time.Since(began)}, order
	}
	order, err := call(ctx, p.picker.slot, p.picker.co, pickReq{c, scores})
	st := stageTrace(p.picker.slot, began)
	if err == nil && len(order) == 0 {
		err = errEmptyOrder
	}
	if err == nil && !inRange(order, len(c.Endpoints)) {
		err = errIndex
	}
	if err != nil {
		st.Fallback = p.picker.failed(err)
		order, _ = p.fallbackPicker.Pick(ctx, c, scores)
	}
	return &st, dedupe(order, len(c.Endpoints))
}

// inRange reports whether every index is in [0, n).
func inRange(idx []int, n int) bool {
	for _, k := range idx {
		if k < 0 || k >= n {
			return false
		}
	}
	return true
}

// dedupe keeps the first occurrence of every position.
func dedupe(order []int, n int) []int {
	seen := make([]bool, n)
	out := order[:0:0]
	for _, k := range order {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
