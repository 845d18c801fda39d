package pipeline

import (
	"context"
	"slices"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// The shadow of the experiment's slot sees the same input as the slot, after the cycle is decided
// and off the request's path, and the pipeline records whether it would have decided the same
// (experiment.Recorder.RecordShadow). What is compared depends on the stage:
//
//	producer  the decision: the pipeline runs the cycle again, not enacted, with the shadow's
//	          predictions in place of the producer's (the same seed, so a random picker draws
//	          the same number), and its first pick or verdict is compared with the enacted one;
//	          this doubles the work of the stages after the producer for every cycle
//	filter    the candidates kept
//	scorer    the best-scored candidate, with the shadow's scores in place of the slot's in the
//	          weighted sum (the top of the scores, not the picker's draw, which may be random)
//	admitter  the verdict: admit, or shed
//	picker    the first candidate picked
//
// A shadow that fails (error, deadline, down) counts as a disagreement whose decision is the error.

// shadowJob is one cycle for the shadow: its input at the slot and the decision enacted there.
type shadowJob struct {
	ctx     context.Context
	in      *sdk.Cycle
	idx     []int          // positions of in's endpoints among the candidates
	cands   []sdk.Endpoint // the trace's candidates, for naming them
	primary string         // the enacted decision, as recorded
	// The weighted sum of every scorer's scores (scorer and picker shadows), and the slot's own
	// scores (scorer shadows).
	totals, own []float64
	weight      float64
}

// keepShadowInput records each member's input at the shadowed slot (stage's index-th).
func (p *Pipeline) keepShadowInput(stage sdk.Stage, index int, ms []*member, in func(*member) *sdk.Cycle) {
	if p.exp == nil || p.exp.shadow == nil || !p.exp.at(stage, index) {
		return
	}
	for _, m := range ms {
		if !m.rerun {
			m.shadowIn, m.shadowIdx = in(m), m.idx
		}
	}
}

// rerunKey marks the context of a shadow producer's re-run.
type rerunKey struct{}

// startShadow hands the members that reached the shadowed slot to the shadow, in the background.
// It runs before the members are released, so it reads their traces before anyone else may.
func (p *Pipeline) startShadow(ms []*member) {
	if p.exp == nil || p.exp.shadow == nil {
		return
	}
	var jobs []shadowJob
	for _, m := range ms {
		if m.shadowIn == nil {
			continue
		}
		j := shadowJob{ctx: context.WithoutCancel(m.ctx), in: m.shadowIn, idx: m.shadowIdx, cands: m.t.Candidates}
		if !p.enacted(m.t, &j) {
			continue // the slot was not reached after all (no candidates left, say)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return
	}
	p.shadows.Add(1)
	go func() {
		defer p.shadows.Done()
		p.runShadow(jobs)
	}()
}

// enacted fills j with the decision the slot made for t; false when t has none.
func (p *Pipeline) enacted(t *Trace, j *shadowJob) bool {
	switch p.exp.stage {
	case sdk.StageProducer:
		if t.Producer == nil || t.Producer.Reason == SkippedProducer {
			return false // the cycle came with predictions: the producer did not decide
		}
		j.primary = outcomeOf(t)
	case sdk.StageFilter:
		if p.exp.index >= len(t.Filters) {
			return false
		}
		j.primary = "kept " + names(j.cands, t.Filters[p.exp.index].Kept)
	case sdk.StageScorer:
		if p.exp.index >= len(t.Scorers) || len(t.Scores) == 0 {
			return false
		}
		st := t.Scorers[p.exp.index]
		j.totals, j.own, j.weight = t.Scores, st.Scores, st.Weight
		j.primary = "top " + j.cands[j.idx[heuristics.FirstMax(t.Scores)]].ID
	case sdk.StageAdmitter:
		if t.Admitter == nil {
			return false
		}
		j.primary = verdict(t.Admitter.Admitted, t.Admitter.Reason)
	case sdk.StagePicker:
		if len(t.Order) == 0 {
			return false
		}
		j.totals = t.Scores // what the shadow picks from
		j.primary = j.cands[t.Order[0]].ID
	default:
		return false
	}
	return true
}

// runShadow calls the shadow for every job and records how its decisions compare.
func (p *Pipeline) runShadow(jobs []shadowJob) {
	ms := make([]*member, len(jobs))
	for i, j := range jobs {
		ms[i] = &member{ctx: j.ctx, cur: j.in, idx: j.idx, t: &Trace{Scores: j.totals}}
	}
	decide := make([]func() (string, error), len(jobs))
	switch sh := p.exp.shadow.(type) {
	case *producerSlot:
		res := callAll(sh.slot, sh.co, ms, cur)
		for i, j := range jobs {
			decide[i] = func() (string, error) {
				if res[i].Err != nil {
					return "", res[i].Err
				}
				c := &sdk.Cycle{Request: j.in.Request, Now: j.in.Now, Seed: j.in.Seed, Excluded: j.in.Excluded, Endpoints: slices.Clone(j.in.Endpoints)}
				for k := range c.Endpoints {
					if k < len(res[i].Value) {
						c.Endpoints[k].Prediction = res[i].Value[k]
					}
				}
				return outcomeOf(p.Run(context.WithValue(j.ctx, rerunKey{}, true), c)), nil
			}
		}
	case *filterSlot:
		res := callAll(sh.slot, sh.co, ms, cur)
		for i := range jobs {
			decide[i] = func() (string, error) {
				keep := slices.Compact(slices.Sorted(slices.Values(res[i].Value.Kept)))
				return "kept " + names(jobs[i].cands, pick(jobs[i].idx, keep)), res[i].Err
			}
		}
	case *scorerSlot:
		res := callAll(sh.slot, sh.co, ms, cur)
		for i, j := range jobs {
			decide[i] = func() (string, error) {
				if res[i].Err != nil {
					return "", res[i].Err
				}
				scores := slices.Clone(res[i].Value.Scores)
				sh.clampScores(scores)
				alt := slices.Clone(j.totals)
				for k := range alt {
					if k < len(scores) && k < len(j.own) {
						alt[k] += j.weight * (scores[k] - j.own[k])
					}
				}
				return "top " + j.cands[j.idx[heuristics.FirstMax(alt)]].ID, nil
			}
		}
	case *admitterSlot:
		res := callAll(sh.slot, sh.co, ms, cur)
		for i := range jobs {
			decide[i] = func() (string, error) { return verdict(res[i].Value.Admitted, res[i].Value.Reason), res[i].Err }
		}
	case *pickerSlot:
		res := callAll(sh.slot, sh.co, ms, func(m *member) pickReq { return pickRequest(m, true) })
		for i, j := range jobs {
			decide[i] = func() (string, error) {
				if res[i].Err == nil && len(res[i].Value) == 0 {
					return "", errEmptyOrder
				}
				if res[i].Err != nil {
					return "", res[i].Err
				}
				return j.cands[j.idx[res[i].Value[0]]].ID, nil
			}
		}
	}
	for i, j := range jobs {
		d, err := decide[i]()
		if err != nil {
			d = "failed: " + fallbackReason(err)
		}
		p.exp.outcomes.RecordShadow(err == nil && d == j.primary, j.primary, d)
	}
}

// names lists the ids of the candidates at positions idx, comma-separated.
func names(cands []sdk.Endpoint, idx []int) string {
	ids := make([]string, len(idx))
	for i, k := range idx {
		ids[i] = cands[k].ID
	}
	return strings.Join(ids, ",")
}

// outcomeOf is a whole decision: the first pick, or why there is none.
func outcomeOf(t *Trace) string {
	switch {
	case !t.Admitted:
		return verdict(false, t.Reason)
	case len(t.Order) == 0:
		return "no pick: " + t.Reason
	default:
		return t.Candidates[t.Order[0]].ID
	}
}

func verdict(admitted bool, reason string) string {
	if admitted {
		return "admit"
	}
	return "shed: " + reason
}
