package pipeline

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/host/builtin"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// member is one cycle travelling the pipeline within a cohort.
type member struct {
	ctx   context.Context
	in    *sdk.Cycle
	began time.Time
	t     *Trace
	cur   *sdk.Cycle // the cycle as the next stage sees it
	idx   []int      // positions of cur's endpoints in t.Candidates
	// produced is the cycle after the producer: what the admitter sees while the filters narrow cur.
	produced *sdk.Cycle
	arm      int // the experiment's arm (index); 0 without an experiment
	// rerun marks a shadow producer's re-run of a decided cycle (shadow.go): it keeps the
	// shadow's predictions, skips the producer and has no shadow of its own.
	rerun bool
	// shadowIn and shadowIdx are the input of the experiment's slot, kept for its shadow.
	shadowIn  *sdk.Cycle
	shadowIdx []int
	// round is the member's place in the round RunRound decides (zero: decided alone); after its
	// weighted after-scores, aligned with t.Scores, and afterAll whether every scorer gave them
	// (round.go).
	round    sdk.Round
	after    []float64
	afterAll bool
	// moved are the weighted scores an earlier round's placements moved (foldPrior), which the
	// picker is given instead of t.Scores; prior counts those placements.
	moved []float64
	prior int
	done  chan struct{}
}

// Cycles travel the pipeline in cohorts: a cycle that arrives while a cohort is under way waits and
// leaves with the others that arrived meanwhile, and the cohort calls every stage in one batch.
// That gives fewer, larger round trips when the host is busy and no wait at all when it is idle.
// A further cohort starts only when a full batch (maxBatch) is waiting, up to maxCohorts at once.

// Run schedules one cycle and returns its trace. It never fails: a stage that errs, times out or
// is down is replaced by its fallback (producer → its last predictions, a prior or none, in that
// order (degrade.go); filter → keep all; scorer → composite; admitter → admit; picker →
// max-score), which the trace records. c is not modified.
func (p *Pipeline) Run(ctx context.Context, c *sdk.Cycle) *Trace {
	m := &member{ctx: ctx, in: c, began: time.Now(), done: make(chan struct{}), rerun: ctx.Value(rerunKey{}) != nil}
	p.mu.Lock()
	p.waiting = append(p.waiting, m)
	if p.cohorts == 0 || (p.cohorts < p.maxCohorts && len(p.waiting) >= p.maxBatch) {
		p.cohorts++
		go p.runCohorts()
	}
	p.mu.Unlock()
	<-m.done
	return m.t
}

// runCohorts takes the waiting cycles as cohorts and runs them until none waits.
func (p *Pipeline) runCohorts() {
	for {
		runtime.Gosched() // let cycles that are about to arrive join this cohort
		p.mu.Lock()
		if len(p.waiting) == 0 {
			p.cohorts--
			p.mu.Unlock()
			return
		}
		n := min(len(p.waiting), p.maxBatch)
		cohort := slices.Clone(p.waiting[:n])
		p.waiting = append(p.waiting[:0], p.waiting[n:]...)
		p.mu.Unlock()
		p.runCohort(cohort, nil)
	}
}

// runCohort runs the members through every stage, one batch call per stage. The leading filters
// that do not read the predictions are called beside the producer (overlap.go). A round's prior
// (RunRoundAfter; nil for none) is asked for just before the picker.
func (p *Pipeline) runCohort(ms []*member, prior Prior) {
	for _, m := range ms {
		c := m.in
		m.t = &Trace{RequestID: c.Request.ID, Profile: p.profile, Seed: c.Seed, Now: c.Now, Admitted: true}
		m.cur = &sdk.Cycle{Request: c.Request, Endpoints: slices.Clone(c.Endpoints), Now: c.Now, Seed: c.Seed, Excluded: c.Excluded, Round: m.round}
		transport.Seal(m.cur) // before the producer and the leading filters send it, concurrently
		if p.exp != nil {
			m.arm = p.exp.assign(c.Request)
			m.t.Experiment, m.t.Arm = p.exp.slot, p.exp.names[m.arm]
		}
	}
	var lead []*member
	var leading sync.WaitGroup
	n := p.overlapped()
	if n > 0 {
		lead = beforeProduction(ms)
		leading.Add(1)
		go func() { defer leading.Done(); p.runFilters(0, n, lead) }()
	}
	if p.producer != nil {
		p.keepShadowInput(sdk.StageProducer, 0, ms, func(m *member) *sdk.Cycle { return m.in })
		p.byArm(sdk.StageProducer, 0, ms, func(arm int, g []*member) {
			p.produce(armSlot(p, sdk.StageProducer, 0, arm, p.producer), g, n > 0)
		})
	}
	for _, m := range ms {
		m.produced = m.cur
		m.t.Candidates = m.cur.Endpoints
		m.idx = heuristics.AllIndices(len(m.cur.Endpoints))
		if len(m.in.Endpoints) == 0 {
			m.t.Reason = "no endpoints"
		}
	}

	var admitted sync.WaitGroup
	if p.admitter != nil {
		p.keepShadowInput(sdk.StageAdmitter, 0, ms, func(m *member) *sdk.Cycle { return m.produced })
		admitted.Add(1)
		go func() {
			defer admitted.Done()
			p.byArm(sdk.StageAdmitter, 0, ms, func(arm int, g []*member) {
				p.admit(armSlot(p, sdk.StageAdmitter, 0, arm, p.admitter), g)
			})
		}()
	}
	if n > 0 {
		leading.Wait()
		joinLeading(ms, lead)
	}
	p.runFilters(n, len(p.filters), ms)
	if active := withCandidates(ms); len(active) > 0 {
		for j := range p.scorers {
			p.keepShadowInput(sdk.StageScorer, j, active, cur)
		}
		p.keepShadowInput(sdk.StagePicker, 0, active, cur)
		p.score(active)
		if prior != nil {
			foldPrior(active, prior())
		}
		p.pickOrder(active)
	}
	admitted.Wait()
	for _, m := range ms {
		if m.t.Admitter != nil && !m.t.Admitter.Admitted {
			m.t.Admitted, m.t.Reason = false, m.t.Admitter.Reason
		}
		m.t.Duration = time.Since(m.began)
	}
	p.startShadow(ms) // before the members are released: it reads their traces
	for _, m := range ms {
		close(m.done)
	}
}

// runFilters runs the members through filters from to to (exclusive, never inside a fused run),
// in order, each on the candidates the one before kept; a member left without any leaves the chain.
func (p *Pipeline) runFilters(from, to int, ms []*member) {
	for i := from; i < to; i++ {
		active := withCandidates(ms)
		if len(active) == 0 {
			return
		}
		if r := p.fusedAt(i); r != nil {
			p.filterFused(r, active)
			i += len(r.slots) - 1
			continue
		}
		p.keepShadowInput(sdk.StageFilter, i, active, cur)
		p.byArm(sdk.StageFilter, i, active, func(arm int, g []*member) {
			p.filter(armSlot(p, sdk.StageFilter, i, arm, p.filters[i]), g)
		})
	}
}

func withCandidates(ms []*member) []*member {
	var out []*member
	for _, m := range ms {
		if len(m.idx) > 0 {
			out = append(out, m)
		}
	}
	return out
}

func cur(m *member) *sdk.Cycle { return m.cur }

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

// SkippedProducer is the producer trace's Reason for a cycle that came with predictions.
const SkippedProducer = "skipped: the cycle carries predictions"

// produce sets every member's predictions, or those that stand in for the producer's where it
// failed (degrade.go), and seals its cycle again. With shared, the leading filters may be reading
// the cycles (overlap.go): the predictions go on a copy, and the cycle is left as it was. A cycle
// that arrives with predictions (a recorded snapshot replayed by `foresight schedule`, which
// holds what the producer said then) keeps them and is not sent to the producer.
func (p *Pipeline) produce(prod *producerSlot, all []*member, shared bool) {
	var ms []*member
	for _, m := range all {
		if m.in.AnyPrediction() || m.rerun {
			m.t.Producer = &StageTrace{Stage: sdk.StageProducer, Plugin: prod.name, Type: prod.typ, Reason: SkippedProducer}
			continue
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return
	}
	began := time.Now()
	res := callAll(prod.slot, prod.co, ms, cur)
	for i, m := range ms {
		st := stageTrace(prod.slot, began)
		preds, err := res[i].Value, res[i].Err
		if err != nil {
			st.Fallback = prod.failed(err)
			preds, st.Degraded, st.Reason = prod.degrade(m.cur)
		} else {
			prod.last.remember(m.cur, preds)
		}
		if shared {
			m.cur = predicted(m.cur, preds)
		} else {
			setPredictions(m.cur, preds)
		}
		transport.Seal(m.cur)
		m.t.Producer = &st
	}
}

// admit records the admitter's verdict on every member's produced cycle (admit where it failed).
func (p *Pipeline) admit(a *admitterSlot, ms []*member) {
	began := time.Now()
	res := callAll(a.slot, a.co, ms, func(m *member) *sdk.Cycle { return m.produced })
	for i, m := range ms {
		st := stageTrace(a.slot, began)
		v, err := res[i].Value, res[i].Err
		if err != nil {
			st.Fallback = a.failed(err)
			v = sdk.AdmitVerdict{Admitted: true, Reason: "admitted by fallback"}
		}
		st.Admitted, st.Reason = v.Admitted, v.Reason
		m.t.Admitter = &st
	}
}

// filter narrows every member's candidates; a failed filter keeps them all. Kept positions are
// deduplicated and ascending.
func (p *Pipeline) filter(f *filterSlot, ms []*member) {
	began := time.Now()
	res := callAll(f.slot, f.co, ms, cur)
	for i, m := range ms {
		keep := f.record(m, began, m.idx, nil, res[i].Value, res[i].Err, false)
		if len(keep) != len(m.cur.Endpoints) {
			m.cur = m.cur.Subset(keep)
			transport.Seal(m.cur)
		}
	}
}

// record applies one filter's answer (v, or its failure err) to m and its trace, and returns the
// positions kept, deduplicated and ascending. The filter saw the endpoints of a cycle whose
// positions base maps to candidates, of which it was given the positions given (nil: all of
// them); a failed filter keeps what it was given.
func (f *filterSlot) record(m *member, began time.Time, base, given []int, v sdk.FilterVerdict, err error, fused bool) []int {
	st := stageTrace(f.slot, began)
	st.Fused = fused
	keep := given
	if err != nil {
		st.Fallback = f.failed(err)
		if keep == nil {
			keep = heuristics.AllIndices(len(base))
		}
	} else {
		st.Reason = v.Reason
		keep = slices.Compact(slices.Sorted(slices.Values(v.Kept)))
	}
	m.idx = pick(base, keep)
	st.Kept = m.idx
	m.t.Filters = append(m.t.Filters, st)
	if len(m.idx) == 0 {
		m.t.Reason = "filter " + f.name + " kept no endpoint"
	}
	return keep
}

// score runs the scorers concurrently over the members and sums each member's weighted scores.
func (p *Pipeline) score(ms []*member) {
	for _, m := range ms {
		m.t.Scored = m.idx
		m.t.Scorers = make([]StageTrace, len(p.scorers))
	}
	var wg sync.WaitGroup
	for j, s := range p.scorers {
		run := func() {
			p.byArm(sdk.StageScorer, j, ms, func(arm int, g []*member) {
				p.scoreWith(j, armSlot(p, sdk.StageScorer, j, arm, s), g)
			})
		}
		if len(p.scorers) == 1 {
			run()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
	for _, m := range ms {
		total := make([]float64, len(m.cur.Endpoints))
		for _, st := range m.t.Scorers {
			for i, v := range st.Scores {
				total[i] += st.Weight * v
			}
		}
		m.t.Scores = total
	}
	sumAfter(ms)
}

// scoreWith records scorer j's clamped scores for every member (composite where it failed).
func (p *Pipeline) scoreWith(j int, s *scorerSlot, ms []*member) {
	began := time.Now()
	res := callAll(s.slot, s.co, ms, cur)
	for i, m := range ms {
		st := stageTrace(s.slot, began)
		scores, err := res[i].Value.Scores, res[i].Err
		if err != nil {
			st.Fallback = s.failed(err)
			scores, _ = p.fallbackScorer.Score(m.ctx, m.cur)
		}
		scores = slices.Clone(scores)
		s.clampScores(scores)
		st.Scores = scores
		if after := res[i].Value.After; err == nil && after != nil {
			st.After = s.finiteAfter(after) // on the scores' scale, which it may leave (sdk.RoundScorer)
		}
		m.t.Scorers[j] = st
	}
}

// pickOrder records every member's preference order, each position at most once (max-score where
// the picker failed or none is configured).
func (p *Pipeline) pickOrder(ms []*member) {
	began := time.Now()
	if p.picker == nil {
		for _, m := range ms {
			order, _ := p.fallbackPicker.Pick(m.ctx, m.cur, m.pickScores())
			m.t.Order = pick(m.idx, order)
			m.t.Picker = &StageTrace{Stage: sdk.StagePicker, Plugin: "default", Type: builtin.MaxScorePickerType, Duration: time.Since(began), Order: m.t.Order}
		}
		return
	}
	p.byArm(sdk.StagePicker, 0, ms, func(arm int, g []*member) {
		p.pickWith(armSlot(p, sdk.StagePicker, 0, arm, p.picker), g, began)
	})
}

// pickWith records the order picker gives every member (max-score where it failed). Members of a
// round are placed in order when the picker places rounds (round.go).
func (p *Pipeline) pickWith(picker *pickerSlot, ms []*member, began time.Time) {
	placed := placeRound(picker, ms)
	res := callAll(picker.slot, picker.co, ms, func(m *member) pickReq { return pickRequest(m, placed) })
	for i, m := range ms {
		st := stageTrace(picker.slot, began)
		order, err := res[i].Value, res[i].Err
		if err == nil && len(order) == 0 {
			err = errEmptyOrder
		}
		if err != nil {
			st.Fallback = picker.failed(err)
			order, _ = p.fallbackPicker.Pick(m.ctx, m.cur, m.pickScores())
		}
		m.t.Order = pick(m.idx, dedupe(order, len(m.cur.Endpoints)))
		st.Order = m.t.Order
		m.t.Picker = &st
	}
	if placed {
		accountRound(ms)
	}
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
