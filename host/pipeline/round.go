package pipeline

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// Rounds: cycles a caller (the proxy's decider) decides together, as if one at a time in arrival
// order, each after the earlier ones were placed on their first choices (sdk.Round). A round is
// one cohort, whose members travel every stage in one batch call; the scorers say what one more
// placement does to each endpoint's score (sdk.AfterScores), and a picker that reports rounds
// (sdk.Info.Rounds) places the members in order against the weighted after-scores. Each
// member's trace says where it stood in its picker call's round and whether its pick accounted
// for the members before it (RoundTrace); the caller decides again, as before rounds, the members
// whose picks did not.

// RoundTrace is a cycle's place in the round its picker call decided.
type RoundTrace struct {
	// ID names the picker call's round: the members of one round share it, and no other round in
	// the process has it.
	ID uint64 `json:"id"`
	// Position is the member's place in that round, from 0, in arrival order; Size how many
	// members it had.
	Position int `json:"position"`
	Size     int `json:"size"`
	// Accounted says the member's pick accounted for the members before it: the picker places
	// rounds, every scorer answered the member with after-scores, and none of its scorers nor its
	// picker fell back.
	Accounted bool `json:"accounted"`
	// Prior counts the placements of an earlier round, not yet dispatched when this round's
	// cycles were read, that were added to the member's cycle and scores before its picker
	// (RunRoundAfter); with Accounted, its pick accounted for them too.
	Prior int `json:"prior,omitempty"`
}

// roundSeq numbers the rounds of picker calls (RoundTrace.ID).
var roundSeq atomic.Uint64

// RunRound schedules cycles as one round and returns their traces in order; ctxs[i] is cycle
// i's context. A round larger than the pipeline's maxBatch is decided as consecutive rounds of
// at most maxBatch, each one batch per stage. Like Run it never fails and modifies no cycle.
func (p *Pipeline) RunRound(ctxs []context.Context, cycles []*sdk.Cycle) []*Trace {
	return p.RunRoundAfter(ctxs, cycles, nil)
}

// Prior returns where an earlier round sent its requests, by endpoint id: placements the cycles
// of the round being decided do not count, because it had not dispatched them when they were read.
// It may block until it knows.
type Prior func() map[string]int

// RunRoundAfter is RunRound for a round decided while an earlier one is still under way: its
// stages run beside the earlier round's, and just before its picker it calls prior (nil: none)
// and adds those placements to every member's cycle (sdk.PlaceOn) and weighted scores and
// after-scores (score − after per placement), as if its cycles had been read after them. Even
// a round of one is then a round (sdk.Round), so that its scorers give after-scores. A member
// whose scorers gave none cannot be moved: its trace's RoundTrace.Prior stays 0 and its pick did
// not account for them.
func (p *Pipeline) RunRoundAfter(ctxs []context.Context, cycles []*sdk.Cycle, prior Prior) []*Trace {
	out := make([]*Trace, len(cycles))
	for start := 0; start < len(cycles); start += p.maxBatch {
		end := min(start+p.maxBatch, len(cycles))
		ms := make([]*member, end-start)
		for i := range ms {
			ctx := ctxs[start+i]
			ms[i] = &member{ctx: ctx, in: cycles[start+i], began: time.Now(), done: make(chan struct{}), rerun: ctx.Value(rerunKey{}) != nil}
			if len(ms) > 1 || prior != nil {
				ms[i].round = sdk.Round{Position: i, Size: len(ms)}
			}
		}
		p.runCohort(ms, prior)
		for i, m := range ms {
			out[start+i] = m.t
		}
	}
	return out
}

// inRound reports whether the members belong to a round (RunRound's cohorts are rounds whole).
func inRound(ms []*member) bool { return len(ms) > 0 && ms[0].round.Size > 0 }

// sumAfter sets the weighted after-scores of every member in a round: each scorer's after-score
// where it gave one, its score where it did not (a placement then changes nothing for it), and
// whether every scorer gave one without falling back.
func sumAfter(ms []*member) {
	for _, m := range ms {
		if m.round.Size == 0 {
			continue
		}
		m.after, m.afterAll = make([]float64, len(m.t.Scores)), true
		for _, st := range m.t.Scorers {
			v := st.After
			if v == nil || st.Fallback != "" {
				v, m.afterAll = st.Scores, false
			}
			for i, x := range v {
				m.after[i] += st.Weight * x
			}
		}
	}
}

// placeRound numbers the members of a round that reach one picker call (an experiment's arm at
// the picker is a call, and a round, of its own) and records it in their traces; it returns
// whether the picker places them in order, in which case their cycles carry their places and
// their requests the after-scores. A picker that does not is sent them as independent cycles.
func placeRound(picker *pickerSlot, ms []*member) bool {
	var in []*member
	for _, m := range ms {
		if m.round.Size > 0 {
			in = append(in, m)
		}
	}
	rounds := len(in) > 0 && picker.plugin.Status().Info.Rounds
	id := roundSeq.Add(1)
	for k, m := range in {
		r := sdk.Round{}
		if rounds {
			r = sdk.Round{Position: k, Size: len(in)}
		}
		if m.cur.Round != r {
			// A copy: a stage call given up on (its deadline passed while it was queued) may be
			// reading m.cur still.
			m.cur = transport.WithRound(m.cur, r)
		}
		m.t.Round = &RoundTrace{ID: id, Position: k, Size: len(in), Prior: m.prior}
	}
	return rounds
}

// pickRequest is m's pick request; placed: its picker places the round (placeRound).
func pickRequest(m *member, placed bool) pickReq {
	scores := m.pickScores()
	if placed && m.cur.InRound() {
		return pickReq{m.cur, scores, m.after}
	}
	return pickReq{m.cur, scores, nil}
}

// pickScores are the weighted scores m's picker is given: its trace's, or those an earlier
// round's placements moved (foldPrior).
func (m *member) pickScores() []float64 {
	if m.moved != nil {
		return m.moved
	}
	return m.t.Scores
}

// foldPrior adds an earlier round's placements (by endpoint id) to each member's cycle and
// scores before its picker (RunRoundAfter): n placements on a candidate move its state and
// predictions as the ledger would (sdk.PlaceOn) and its score and after-score by n × (score −
// after). A member some of whose scorers gave no after-scores is left as it is: its pick cannot
// account for them.
func foldPrior(ms []*member, placed map[string]int) {
	if len(placed) == 0 {
		return
	}
	for _, m := range ms {
		if !m.afterAll {
			continue
		}
		var view *sdk.Cycle
		for e, ep := range m.cur.Endpoints {
			n := placed[ep.ID]
			if n == 0 {
				continue
			}
			if view == nil {
				view = m.cur.Subset(heuristics.AllIndices(len(m.cur.Endpoints)))
				m.moved = slices.Clone(m.t.Scores)
			}
			sdk.PlaceOn(view, e, n)
			d := m.moved[e] - m.after[e]
			m.moved[e] -= float64(n) * d
			m.after[e] -= float64(n) * d
			m.prior += n
		}
		if view != nil {
			transport.Seal(view)
			m.cur = view
		}
	}
}

// accountRound records, in the traces of the members of a round that their picker placed in
// order, whether each pick accounted for the members before it (RoundTrace.Accounted).
func accountRound(ms []*member) {
	for _, m := range ms {
		if r := m.t.Round; r != nil && m.cur.InRound() {
			r.Accounted = m.afterAll && m.t.Picker.Fallback == ""
		}
	}
}
