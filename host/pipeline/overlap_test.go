package pipeline_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"
)

// readsFilter is a test filter that declares the fields it reads (sdk.Reader).
type readsFilter struct {
	testFilter
	reads []string
}

func (f readsFilter) Reads() []string { return f.reads }

// The reads of a filter that judges by the prefix match alone, and of one that also reads the
// predictions.
var (
	statesOnly     = []string{"endpoints.states.prefix_match"}
	withPrediction = []string{"endpoints.states.prefix_match", "endpoints.predictions"}
)

func readingFilter(name string, reads []string, f filterFn) stageSpec {
	return stageSpec{name: name, stage: sdk.StageFilter, impl: readsFilter{testFilter{f: f}, reads}}
}

// ttftByPosition predicts 100 ms × (position + 1) for every endpoint.
func ttftByPosition(c *sdk.Cycle) []sdk.Prediction {
	out := make([]sdk.Prediction, len(c.Endpoints))
	for i := range out {
		out[i] = sdk.Prediction{Valid: true, TTFTMs: float64(100 * (i + 1))}
	}
	return out
}

// seen lists endpoints as id:valid/ttft, what a stage saw of them.
func seen(eps []sdk.Endpoint) []string {
	out := []string{}
	for _, e := range eps {
		out = append(out, fmt.Sprintf("%s:%v/%g", e.ID, e.Prediction.Valid, e.Prediction.TTFTMs))
	}
	return out
}

func TestFilterThatDoesNotReadPredictionsIsCalledBesideTheProducer(t *testing.T) {
	// The producer answers only once the filter's call has arrived: called in order, the filter
	// would wait for the producer's answer, and the producer would wait for its deadline and fall
	// back.
	filtered := make(chan struct{})
	var once sync.Once
	j := &journal{}
	p := build(t, "2s",
		producer("predict", func(ctx context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
			select {
			case <-filtered:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			j.note("predict", c, nil)
			return ttftByPosition(c), nil
		}),
		readingFilter("sticky", statesOnly, func(ctx context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
			j.note("sticky", c, nil)
			once.Do(func() { close(filtered) })
			return keepIDs("b", "c")(ctx, c)
		}),
		scorer("s", "", func(ctx context.Context, c *sdk.Cycle) ([]float64, error) {
			j.note("s", c, nil)
			return byID(map[string]float64{"b": 1})(ctx, c)
		}),
	)
	tr := p.Run(context.Background(), testCycle())
	if tr.Producer.Fallback != "" {
		t.Fatalf("the producer fell back (%s): the filter was not called while it waited", tr.Producer.Fallback)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"stages", j.order, []string{"sticky", "predict", "s"}},
		// The filter saw the cycle as the producer received it; the scorer after it, the
		// endpoints it kept with the producer's predictions (b 200 ms, c 300 ms).
		{"filter saw", seen(j.saw["sticky"]), []string{"a:false/0", "b:false/0", "c:false/0"}},
		{"scorer saw", seen(j.saw["s"]), []string{"b:true/200", "c:true/300"}},
		{"candidates", seen(tr.Candidates), []string{"a:true/100", "b:true/200", "c:true/300"}},
		{"kept", tr.Filters[0].Kept, []int{1, 2}},
		{"order", tr.OrderIDs(), []string{"b", "c"}},
	}
	for _, ck := range checks {
		if diff := cmp.Diff(ck.want, ck.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", ck.what, diff)
		}
	}
}

// buildLocal builds the pipeline of yaml, its plugins in process as impls, and closes it when the
// test ends.
func buildLocal(t *testing.T, yaml string, impls map[string]sdk.Plugin) *pipeline.Pipeline {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	p, err := pipeline.BuildInProcess(context.Background(), cfg, impls, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestFiltersThatMayReadPredictionsWaitForTheProducer(t *testing.T) {
	// Every case's filter "f" must see the producer's predictions: it reads them, may read them,
	// or takes its input after the producer's for an experiment.
	types := map[string]string{"predict": "test-producer", "predict-b": "test-producer", "lead": "test-filter", "f": "test-filter", "f-b": "test-filter"}
	// declared declares the plugins a pipeline section refers to (the config refuses others).
	declared := func(pipeline string) string {
		var b strings.Builder
		b.WriteString("plugins:\n")
		for _, name := range slices.Sorted(maps.Keys(types)) {
			if regexp.MustCompile(`pluginRef: ` + name + `[,}]`).MatchString(pipeline) {
				fmt.Fprintf(&b, "  - {name: %s, type: %s}\n", name, types[name])
			}
		}
		return b.String()
	}
	tests := []struct {
		name     string
		pipeline string
		reads    []string // f's (and f-b's); nil: it declares none, so it reads everything
		saw      []string // what f saw
	}{
		{name: "it reads the predictions", reads: withPrediction,
			pipeline: "producer: {pluginRef: predict}\n  filters: [{pluginRef: f}]",
			saw:      []string{"a:true/100", "b:true/200", "c:true/300"}},
		{name: "it declares no reads",
			pipeline: "producer: {pluginRef: predict}\n  filters: [{pluginRef: f}]",
			saw:      []string{"a:true/100", "b:true/200", "c:true/300"}},
		// lead keeps b and c beside the producer; f, after it, reads the predictions.
		{name: "after a filter that does not read them", reads: withPrediction,
			pipeline: "producer: {pluginRef: predict}\n  filters: [{pluginRef: lead}, {pluginRef: f}]",
			saw:      []string{"b:true/200", "c:true/300"}},
		{name: "it is an experiment's slot", reads: statesOnly,
			pipeline: "producer: {pluginRef: predict}\n  filters: [{arms: [{name: x, pluginRef: f}, {name: y, pluginRef: f-b}]}]",
			saw:      []string{"a:true/100", "b:true/200", "c:true/300"}},
		{name: "it is a shadowed slot", reads: statesOnly,
			pipeline: "producer: {pluginRef: predict}\n  filters: [{pluginRef: f, shadow: {name: s, pluginRef: f-b}}]",
			saw:      []string{"a:true/100", "b:true/200", "c:true/300"}},
		// Its filters' input is the producer's arm's: nothing is called beside an experiment.
		{name: "the producer is an experiment's slot", reads: statesOnly,
			pipeline: "producer: {arms: [{name: x, pluginRef: predict}, {name: y, pluginRef: predict-b}]}\n  filters: [{pluginRef: f}]",
			saw:      []string{"a:true/100", "b:true/200", "c:true/300"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &journal{}
			prod := testProducer{f: func(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
				j.note("predict", c, nil)
				return ttftByPosition(c), nil
			}}
			note := func(name string, f filterFn) filterFn {
				return func(ctx context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
					j.note(name, c, nil)
					return f(ctx, c)
				}
			}
			var f, fb sdk.Plugin = testFilter{f: note("f", keepIDs("a", "b", "c"))}, testFilter{f: note("f-b", keepIDs("a", "b", "c"))}
			if tc.reads != nil {
				f, fb = readsFilter{f.(testFilter), tc.reads}, readsFilter{fb.(testFilter), tc.reads}
			}
			p := buildLocal(t, declared(tc.pipeline)+"pipeline:\n  "+tc.pipeline+"\n", map[string]sdk.Plugin{
				"predict": prod, "predict-b": prod, "f": f, "f-b": fb,
				"lead": readsFilter{testFilter{f: keepIDs("b", "c")}, statesOnly}})
			p.Run(context.Background(), testCycle())
			p.Close() // waits for a shadow's call
			name := "f"
			if !slices.Contains(j.order, name) {
				name = "f-b" // the request's arm
			}
			if i := slices.Index(j.order, name); i < 0 || !slices.Contains(j.order[:i], "predict") {
				t.Errorf("stages ran as %q, want the producer before %s", j.order, name)
			}
			if diff := cmp.Diff(tc.saw, seen(j.saw[name])); diff != "" {
				t.Errorf("f saw (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFiltersBesideTheProducerLeaveTheTracesOfTheOrder(t *testing.T) {
	// Each case runs on two pipelines that differ only in the leading filters' reads: without the
	// predictions they are called beside the producer, with them after it. The traces must be the
	// same but for the durations (and the round's number, unique in the process).
	predicts := func(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) { return ttftByPosition(c), nil }
	fails := func(context.Context, *sdk.Cycle) ([]sdk.Prediction, error) { return nil, boom }
	filterFails := func(context.Context, *sdk.Cycle) (sdk.FilterVerdict, error) { return sdk.FilterVerdict{}, boom }
	withPredictions := func() *sdk.Cycle {
		c := testCycle()
		for i := range c.Endpoints {
			c.Endpoints[i].Prediction = sdk.Prediction{Valid: true, TTFTMs: 50}
		}
		return c
	}
	noEndpoints := func() *sdk.Cycle { c := testCycle(); c.Endpoints = nil; return c }
	tests := []struct {
		name string
		// produce makes the producer's answer on its n-th call (from 1), for each pipeline anew.
		produce func(n int64) producerFn
		lead    []filterFn // the leading filters
		next    filterFn   // a filter after them that reads the predictions; nil: none
		cycle   func() *sdk.Cycle
		round   int // >1: a round of that many copies of the cycle (RunRound)
		runs    int // decisions made; the last one's traces are compared (0: 1)
	}{
		{name: "keeps some", produce: func(int64) producerFn { return predicts }, lead: []filterFn{keepIDs("b", "c")}},
		{name: "keeps none: the chain ends", produce: func(int64) producerFn { return predicts },
			lead: []filterFn{keepIDs(), keepIDs("a")}, next: keepIDs("a")},
		{name: "fails: keeps all", produce: func(int64) producerFn { return predicts }, lead: []filterFn{filterFails}},
		{name: "the first fails, the second keeps one", produce: func(int64) producerFn { return predicts },
			lead: []filterFn{filterFails, keepIDs("c")}, next: keepIDs("c")},
		// Nothing to reuse, and the test cycle's endpoints have no first-token rate for the prior.
		{name: "the producer fails: no predictions", produce: func(int64) producerFn { return fails },
			lead: []filterFn{keepIDs("a", "b")}},
		// The first decision's predictions stand in for the second's.
		{name: "the producer fails: its last predictions", produce: func(n int64) producerFn {
			if n == 1 {
				return predicts
			}
			return fails
		}, lead: []filterFn{keepIDs("a", "b")}, next: keepIDs("b"), runs: 2},
		{name: "the producer fails and the filter keeps none", produce: func(int64) producerFn { return fails },
			lead: []filterFn{keepIDs()}},
		{name: "the cycle carries predictions", produce: func(int64) producerFn { return fails },
			lead: []filterFn{keepIDs("b", "c")}, next: keepIDs("c"), cycle: withPredictions},
		{name: "no endpoints", produce: func(int64) producerFn { return predicts },
			lead: []filterFn{keepIDs()}, cycle: noEndpoints},
		{name: "a round", produce: func(int64) producerFn { return predicts },
			lead: []filterFn{keepIDs("b", "c")}, next: keepIDs("c"), round: 3},
	}
	decide := func(t *testing.T, leadReads []string, tc int) ([]*pipeline.Trace, bool) {
		c := tests[tc]
		var calls atomic.Int64
		var sawPredictions atomic.Bool
		specs := []stageSpec{producer("predict", func(ctx context.Context, cy *sdk.Cycle) ([]sdk.Prediction, error) {
			return c.produce(calls.Add(1))(ctx, cy)
		})}
		for i, f := range c.lead {
			specs = append(specs, readingFilter(fmt.Sprint("lead-", i), leadReads, func(ctx context.Context, cy *sdk.Cycle) (sdk.FilterVerdict, error) {
				if cy.AnyPrediction() {
					sawPredictions.Store(true)
				}
				return f(ctx, cy)
			}))
		}
		if c.next != nil {
			specs = append(specs, readingFilter("next", withPrediction, c.next))
		}
		specs = append(specs,
			scorer("s", "", byID(map[string]float64{"a": 0.2, "b": 0.8, "c": 0.5})),
			admitter("admit", func(context.Context, *sdk.Cycle) (sdk.AdmitVerdict, error) {
				return sdk.AdmitVerdict{Admitted: true, Reason: "room"}, nil
			}),
			picker("pick", func(_ context.Context, cy *sdk.Cycle, scores []float64) ([]int, error) {
				order := make([]int, len(scores))
				for i := range order {
					order[i] = len(order) - 1 - i // the last first: not the scores' order
				}
				return order, nil
			}))
		p := build(t, "1s", specs...)
		cycle := testCycle
		if c.cycle != nil {
			cycle = c.cycle
		}
		var out []*pipeline.Trace
		for range max(c.runs, 1) {
			if c.round < 2 {
				out = []*pipeline.Trace{p.Run(context.Background(), cycle())}
				continue
			}
			ctxs, cycles := make([]context.Context, c.round), make([]*sdk.Cycle, c.round)
			for i := range cycles {
				ctxs[i], cycles[i] = context.Background(), cycle()
				cycles[i].Request.ID = fmt.Sprint("req-", i)
			}
			out = p.RunRound(ctxs, cycles)
		}
		return out, sawPredictions.Load()
	}
	ignore := cmp.Options{
		cmpopts.IgnoreFields(pipeline.Trace{}, "Duration"),
		cmpopts.IgnoreFields(pipeline.StageTrace{}, "Duration"),
		cmpopts.IgnoreFields(pipeline.RoundTrace{}, "ID"),
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inOrder, _ := decide(t, withPrediction, i)
			beside, saw := decide(t, statesOnly, i)
			if diff := cmp.Diff(inOrder, beside, ignore); diff != "" {
				t.Errorf("traces (-in order +beside the producer):\n%s", diff)
			}
			// Where the producer was called, the leading filters were called before its answer.
			if called := tc.cycle == nil; called && saw {
				t.Errorf("a leading filter saw predictions: it was not called beside the producer")
			}
		})
	}
}
