package pipeline

import (
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// A filter that declares its reads, and not the predictions among them, cannot depend on the
// producer's answer: the host would send it the same cycle before the producer as after. So the
// leading filters of that kind are called beside the producer, on the cycle as the producer
// receives it, and their kept endpoints are applied to the produced cycle once both have
// answered: a decision waits for the longer of the two rather than for their sum. Each filter
// sees what it sees in order (the request, the states, the endpoints the filters before it kept),
// its answer, fallback and trace are its own as in order, and one that keeps no endpoint ends the
// chain as in order. The run stops at the first filter that reads the predictions or declares no
// reads, at the experiment's slot (its arms and shadow take their input after the producer's), and
// before a fused run that it would cut in two; nothing overlaps when the producer is the
// experiment's slot.

// overlapped returns how many leading filters are called beside the producer (0: none).
func (p *Pipeline) overlapped() int {
	if p.producer == nil || p.exp.at(sdk.StageProducer, 0) {
		return 0
	}
	n := 0
	for n < len(p.filters) {
		k := 1
		if r := p.fusedAt(n); r != nil {
			k = len(r.slots)
		}
		for i := n; i < n+k; i++ {
			if p.exp.at(sdk.StageFilter, i) || !judgesByState(p.filters[i].plugin.Status().Info.Reads) {
				return n
			}
		}
		n += k
	}
	return n
}

// beforeProduction returns, for every member, one that travels the leading filters while the
// producer answers: the same request, context and round, the cycle the producer receives, and a
// trace of its own, which joinLeading merges.
func beforeProduction(ms []*member) []*member {
	out := make([]*member, len(ms))
	for i, m := range ms {
		out[i] = &member{ctx: m.ctx, in: m.in, cur: m.cur, idx: heuristics.AllIndices(len(m.cur.Endpoints)),
			t: &Trace{}, arm: m.arm, round: m.round}
	}
	return out
}

// joinLeading applies what the leading filters decided for each member (lead[i] for ms[i]) to the
// member's produced cycle: their traces, a filter's reason for keeping none, and the candidates
// kept, whose positions are the produced cycle's.
func joinLeading(ms, lead []*member) {
	for i, m := range ms {
		l := lead[i]
		m.t.Filters = l.t.Filters
		if l.t.Reason != "" {
			m.t.Reason = l.t.Reason
		}
		m.idx = l.idx
		if len(m.idx) != len(m.cur.Endpoints) {
			m.cur = m.cur.Subset(m.idx)
			transport.Seal(m.cur)
		}
	}
}

// predicted returns a copy of c whose endpoints carry preds. c is left as it was: the leading
// filters may be reading it.
func predicted(c *sdk.Cycle, preds []sdk.Prediction) *sdk.Cycle {
	n := &sdk.Cycle{Request: c.Request, Now: c.Now, Seed: c.Seed, Excluded: c.Excluded, Round: c.Round, Endpoints: slices.Clone(c.Endpoints)}
	setPredictions(n, preds)
	return n
}

// setPredictions gives c's endpoints preds, one each, in place.
func setPredictions(c *sdk.Cycle, preds []sdk.Prediction) {
	for j := range c.Endpoints {
		c.Endpoints[j].Prediction = preds[j]
	}
}
