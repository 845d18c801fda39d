package pipeline

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
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
}

// roundSeq numbers the rounds of picker calls (RoundTrace.ID).
var roundSeq atomic.Uint64

// RunRound schedules cycles as one round and returns their traces in order; ctxs[i] is cycle
// i's context. A round larger than the pipeline's maxBatch is decided as consecutive rounds of
// at most maxBatch, each one batch per stage. Like Run it never fails and modifies no cycle.
func (p *Pipeline) RunRound(ctxs []context.Context, cycles []*sdk.Cycle) []*Trace {
	out := make([]*Trace, len(cycles))
	for start := 0; start < len(cycles); start += p.maxBatch {
		end := min(start+p.maxBatch, len(cycles))
		ms := make([]*member, end-start)
		for i := range ms {
			ctx := ctxs[start+i]
			ms[i] = &member{ctx: ctx, in: cycles[start+i], began: time.Now(), done: make(chan struct{}), rerun: ctx.Value(rerunKey{}) != nil}
			if len(ms) > 1 {
				ms[i].round = sdk.Round{Position: i, Size: len(ms)}
			}
		}
		p.runCohort(ms)
		for i, m := range ms {
			out[start+i] = m.t
		}
	}
	return out
}

// inRound reports whether the members belong to a round (RunRound's cohorts are rounds whole).
func inRound(ms []*member) bool { return len(ms) > 0 && ms[0].round.Size > 1 }

// sumAfter sets the weighted after-scores of every member in a round: each scorer's after-score
// where it gave one, its score where it did not (a placement then changes nothing for it), and
// whether every scorer gave one without falling back.
func sumAfter(ms []*member) {
	for _, m := range ms {
		if m.round.Size < 2 {
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
		if m.round.Size > 1 {
			in = append(in, m)
		}
	}
	rounds := len(in) > 1 && picker.plugin.Status().Info.Rounds
	id := roundSeq.Add(1)
	for k, m := range in {
		m.cur.Round = sdk.Round{}
		if rounds {
			m.cur.Round = sdk.Round{Position: k, Size: len(in)}
		}
		m.t.Round = &RoundTrace{ID: id, Position: k, Size: len(in)}
	}
	return rounds
}

// pickRequest is m's pick request; placed: its picker places the round (placeRound).
func pickRequest(m *member, placed bool) pickReq {
	if placed && m.cur.InRound() {
		return pickReq{m.cur, m.t.Scores, m.after}
	}
	return pickReq{m.cur, m.t.Scores, nil}
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
