package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// logicalState is everything about an engine that can influence what it does next.
type logicalState struct {
	Clock                                time.Duration
	Noise                                noise
	Stalled                              bool
	Queries, Hits, Preemptions           int64
	Pending, Waiting, Running, Transfers []reqState
	Blocks                               []block
	Table                                []slot
	Head, Tail, NumFree                  int32
}

func stateOf(e *Batch) logicalState {
	s := logicalState{
		Clock: e.clock, Noise: e.noise, Stalled: e.stalled, Queries: e.queries, Hits: e.hits, Preemptions: e.preemptions,
		Pending: cloneReqs(e.pending), Waiting: cloneReqs(e.waiting), Running: cloneReqs(e.running), Transfers: cloneReqs(e.transfers),
		Head: e.kv.head, Tail: e.kv.tail, NumFree: e.kv.numFree,
	}
	for b := range e.kv.numBlocks {
		s.Blocks = append(s.Blocks, e.kv.get(b))
	}
	for i := range int32(1) << e.kv.tableBits {
		s.Table = append(s.Table, e.kv.table.get(i))
	}
	return s
}

// TestSpeculateMatchesCloneAndRestores speculates many arrivals on an engine under pressure
// (evictions, preemptions, shared prefixes, noise): each gives the same first-token time as the
// same simulation on a clone, leaves the engine's full state unchanged, and the engine then
// runs exactly like a twin that never speculated.
func TestSpeculateMatchesCloneAndRestores(t *testing.T) {
	cfg := testConfig()
	cfg.NumGPUBlocks = 70 // tight: the forward simulations evict and preempt
	cfg.Noise, cfg.Seed = 0.2, 5
	e, twin := newEngine(t, cfg), newEngine(t, cfg)
	workload(t, e, 150, 0)
	workload(t, twin, 150, 0)
	var spec, twinEvents []Event
	preemptingSpecs := 0
	for i := 0; e.Busy(); i++ {
		if e.NextStep() != twin.NextStep() {
			t.Fatalf("step %d: next step %v, twin %v", i, e.NextStep(), twin.NextStep())
		}
		r := Request{ID: 1e6 + uint64(i), InputTokens: 30 + (i*53)%400, OutputTokens: 3, Blocks: seqHashes(uint64(i%5)*1000, (30+(i*53)%400)/16)}
		now := e.Clock()
		before := stateOf(e)
		want := firstTokenAt(t, e.Clone(), r, now)
		if !reflect.DeepEqual(before, stateOf(e)) {
			t.Fatalf("step %d: Clone changed the original", i)
		}
		var got time.Duration
		var pre int64
		e.Speculate(func(se Engine) {
			s := se.(*Batch)
			got = firstTokenAt(t, s, r, now)
			pre = s.preemptions
			clone := s.Clone() // a clone taken inside must survive the rollback
			clone.Step(clone.NextStep())
		})
		if pre > before.Preemptions {
			preemptingSpecs++
		}
		if got != want {
			t.Fatalf("step %d: speculative first token at %v, clone's at %v", i, got, want)
		}
		if !reflect.DeepEqual(before, stateOf(e)) {
			t.Fatalf("step %d: Speculate did not restore the engine:\n%s", i,
				cmp.Diff(before, stateOf(e), cmp.Exporter(func(reflect.Type) bool { return true })))
		}
		res := e.Step(e.NextStep())
		spec = append(spec, res.Events...)
		twinEvents = append(twinEvents, twin.Step(twin.NextStep()).Events...)
	}
	if twin.Busy() {
		t.Fatal("twin still busy")
	}
	if diff := cmp.Diff(twinEvents, spec); diff != "" {
		t.Fatalf("speculating engine diverged from its twin (-twin +speculating):\n%s", diff)
	}
	if diff := cmp.Diff(twin.Metrics(), e.Metrics()); diff != "" {
		t.Fatalf("metrics differ (-twin +speculating):\n%s", diff)
	}
	if preemptingSpecs == 0 {
		t.Error("no speculation preempted: the test is too easy")
	}
}

// TestSpeculateKeepsCallersEvents checks that the events of the last Step stay valid.
func TestSpeculateKeepsCallersEvents(t *testing.T) {
	e := newEngine(t, testConfig())
	workload(t, e, 20, 0)
	var res StepResult
	for len(res.Events) == 0 {
		res = e.Step(e.NextStep())
	}
	want := append([]Event(nil), res.Events...)
	e.Speculate(func(s Engine) {
		firstTokenAt(t, s.(*Batch), Request{ID: 999, InputTokens: 50, OutputTokens: 2}, s.Clock())
	})
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Fatalf("Speculate overwrote the last step's events:\n%s", diff)
	}
}
