package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// A fused run is consecutive filters served by instances of one multi-instance process (say a
// strict and a loose instance of the affinity filter): the pipeline reaches them all in one call
// per cohort (transport.FilterClient.FilterChain), and records each filter's answer, fallback and
// statistics as its own, exactly as if it had called them one by one.

// fusedRun is a run of at least two consecutive filters reached in one call.
type fusedRun struct {
	first int // the position of its first filter
	slots []*filterSlot
	names []string // the instances, in order
	co    *coalescer[*sdk.Cycle, []transport.Result[sdk.FilterVerdict]]
}

// fuseFilters finds the runs of consecutive filters that one process serves, out of the
// experiment's slot (whose arms and shadow go their own ways), and gives each run its coalescer,
// which also stands as every member's in the statistics.
func (p *Pipeline) fuseFilters(maxBatch int) {
	for i := 0; i < len(p.filters); {
		j := i + 1
		key := p.filters[i].plugin.Fusable()
		for key != nil && !p.exp.at(sdk.StageFilter, i) && j < len(p.filters) &&
			p.filters[j].plugin.Fusable() == key && !p.exp.at(sdk.StageFilter, j) {
			j++
		}
		if j-i >= 2 {
			p.runs = append(p.runs, p.newFusedRun(i, p.filters[i:j], maxBatch))
		}
		i = j
	}
}

func (p *Pipeline) newFusedRun(first int, slots []*filterSlot, maxBatch int) *fusedRun {
	r := &fusedRun{first: first, slots: slots}
	for _, s := range slots {
		r.names = append(r.names, s.plugin.Instance())
	}
	lead := slots[0].slot
	r.co = stageCoalescer(lead, maxBatch, func(c transport.ChainFilter, ctx context.Context, cycles []*sdk.Cycle) ([]transport.Result[[]transport.Result[sdk.FilterVerdict]], error) {
		steps, err := c.FilterChain(ctx, cycles, r.names)
		if err != nil {
			return nil, err
		}
		out := make([]transport.Result[[]transport.Result[sdk.FilterVerdict]], len(steps))
		for i := range steps {
			out[i].Value = steps[i]
		}
		return out, nil
	})
	for k := range p.handles {
		for _, s := range slots {
			if p.handles[k].s == s.slot {
				p.handles[k].co = r.co
			}
		}
	}
	return r
}

// fusedAt returns the fused run that begins at filter i, or nil.
func (p *Pipeline) fusedAt(i int) *fusedRun {
	for _, r := range p.runs {
		if r.first == i {
			return r
		}
	}
	return nil
}

// filterFused narrows every member's candidates through the run's filters in one call. Each
// filter's answer is applied in turn as filter applies it; a filter that failed keeps what it
// was given, and a call that failed as a whole fails every filter of the run, each falling back.
func (p *Pipeline) filterFused(r *fusedRun, ms []*member) {
	began := time.Now()
	ctxs, sent := make([]context.Context, len(ms)), make([]*sdk.Cycle, len(ms))
	for i, m := range ms {
		var cancel context.CancelFunc
		ctxs[i], cancel = context.WithTimeout(m.ctx, r.deadline(m.request()))
		defer cancel()
		sent[i] = m.cur
	}
	res := r.co.doMany(ctxs, sent)
	for i, m := range ms {
		steps, callErr := res[i].Value, res[i].Err
		base := m.idx  // candidate positions of the sent cycle's endpoints
		var keep []int // positions in the sent cycle kept so far; nil: all
		for k, f := range r.slots {
			if len(m.idx) == 0 {
				break // the filter before kept nothing: no further filter runs
			}
			f.calls.Add(1)
			err := callErr
			if err == nil && k >= len(steps) {
				err = fmt.Errorf("the fused call answered %d of %d filters", len(steps), len(r.slots))
			}
			var v sdk.FilterVerdict
			if err == nil {
				v, err = steps[k].Value, steps[k].Err
			}
			keep = f.record(m, began, base, keep, v, err, true)
		}
		if len(keep) != len(sent[i].Endpoints) {
			m.cur = sent[i].Subset(keep)
			transport.Seal(m.cur)
		}
	}
}

// deadline returns the run's deadline of a call for r: the sum of its filters' deadlines, the
// budget they would have had one by one.
func (r *fusedRun) deadline(req *sdk.Request) time.Duration {
	var t time.Duration
	for _, s := range r.slots {
		t += s.deadline.forRequest(req)
	}
	return t
}
