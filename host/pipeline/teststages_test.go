package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Test stages and helpers shared by the pipeline tests.

// Test stages: each wraps a function, so a test states its stage's answer in one line.
type (
	producerFn func(context.Context, *sdk.Cycle) ([]sdk.Prediction, error)
	filterFn   func(context.Context, *sdk.Cycle) (sdk.FilterVerdict, error)
	scorerFn   func(context.Context, *sdk.Cycle) ([]float64, error)
	admitterFn func(context.Context, *sdk.Cycle) (sdk.AdmitVerdict, error)
	pickerFn   func(context.Context, *sdk.Cycle, []float64) ([]int, error)

	meta         struct{}
	testProducer struct {
		meta
		f producerFn
	}
	testFilter struct {
		meta
		f filterFn
	}
	testScorer struct {
		meta
		f scorerFn
	}
	testAdmitter struct {
		meta
		f admitterFn
	}
	testPicker struct {
		meta
		f pickerFn
	}
)

func (meta) Description() string    { return "a test stage" }
func (meta) Configure([]byte) error { return nil }
func (testProducer) Type() string   { return "test-producer" }
func (testFilter) Type() string     { return "test-filter" }
func (testScorer) Type() string     { return "test-scorer" }
func (testAdmitter) Type() string   { return "test-admitter" }
func (testPicker) Type() string     { return "test-picker" }

func (s testProducer) Produce(ctx context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
	return s.f(ctx, c)
}
func (testProducer) Observe(context.Context, []sdk.Sample) (sdk.ObserveResult, error) {
	return sdk.ObserveResult{}, nil
}
func (s testFilter) Filter(ctx context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	return s.f(ctx, c)
}
func (s testScorer) Score(ctx context.Context, c *sdk.Cycle) ([]float64, error) { return s.f(ctx, c) }
func (s testAdmitter) Admit(ctx context.Context, c *sdk.Cycle) (sdk.AdmitVerdict, error) {
	return s.f(ctx, c)
}
func (s testPicker) Pick(ctx context.Context, c *sdk.Cycle, scores []float64) ([]int, error) {
	return s.f(ctx, c, scores)
}

// stageSpec is one plugin of a test pipeline, declared without a path and run in process.
type stageSpec struct {
	name            string
	stage           sdk.Stage
	impl            sdk.Plugin
	weight, timeout string // YAML values; empty leaves them unset
}

func producer(name string, f producerFn) stageSpec {
	return stageSpec{name: name, stage: sdk.StageProducer, impl: testProducer{f: f}}
}
func filter(name string, f filterFn) stageSpec {
	return stageSpec{name: name, stage: sdk.StageFilter, impl: testFilter{f: f}}
}
func scorer(name, weight string, f scorerFn) stageSpec {
	return stageSpec{name: name, stage: sdk.StageScorer, impl: testScorer{f: f}, weight: weight}
}
func admitter(name string, f admitterFn) stageSpec {
	return stageSpec{name: name, stage: sdk.StageAdmitter, impl: testAdmitter{f: f}}
}
func picker(name string, f pickerFn) stageSpec {
	return stageSpec{name: name, stage: sdk.StagePicker, impl: testPicker{f: f}}
}

// within sets a plugin's own call timeout (it overrides the pipeline's stageTimeout).
func (s stageSpec) within(timeout string) stageSpec { s.timeout = timeout; return s }

// build writes the YAML of a pipeline of specs, parses it, launches each plugin in process in
// cfg.Plugins order and assembles the pipeline.
func build(t *testing.T, stageTimeout string, specs ...stageSpec) *pipeline.Pipeline {
	t.Helper()
	return buildWith(t, []string{"stageTimeout: " + stageTimeout}, specs...)
}

// buildWith is build with the pipeline's settings given as YAML lines ("maxBatch: 4").
func buildWith(t *testing.T, settings []string, specs ...stageSpec) *pipeline.Pipeline {
	t.Helper()
	var plugins, pipe strings.Builder
	plugins.WriteString("plugins:\n")
	pipe.WriteString("pipeline:\n")
	for _, s := range settings {
		fmt.Fprintf(&pipe, "  %s\n", s)
	}
	impls := map[string]sdk.Plugin{}
	refs := map[sdk.Stage][]string{}
	for _, s := range specs {
		impls[s.name] = s.impl
		fmt.Fprintf(&plugins, "  - name: %s\n    type: %s\n", s.name, s.impl.Type())
		if s.timeout != "" {
			fmt.Fprintf(&plugins, "    timeout: %s\n", s.timeout)
		}
		ref := "{pluginRef: " + s.name + "}"
		if s.weight != "" {
			ref = "{pluginRef: " + s.name + ", weight: " + s.weight + "}"
		}
		refs[s.stage] = append(refs[s.stage], ref)
	}
	for _, sec := range []struct {
		stage sdk.Stage
		key   string
	}{{sdk.StageProducer, "producer"}, {sdk.StageFilter, "filters"}, {sdk.StageScorer, "scorers"}, {sdk.StageAdmitter, "admitter"}, {sdk.StagePicker, "picker"}} {
		switch r := refs[sec.stage]; {
		case len(r) == 0:
		case sec.stage == sdk.StageFilter || sec.stage == sdk.StageScorer:
			fmt.Fprintf(&pipe, "  %s: [%s]\n", sec.key, strings.Join(r, ", "))
		default:
			fmt.Fprintf(&pipe, "  %s: %s\n", sec.key, r[0])
		}
	}
	return buildLocal(t, plugins.String()+pipe.String(), impls)
}

// endpoints a, b, c; their composite fallback scores, (1·(1−kv) + 1·(maxQ−q)/maxQ + 1·prefix)/3
// with maxQ = 2, are a: (0.3 + 0 + 0.3)/3 = 0.2, b: (0.9 + 1 + 0.5)/3 = 0.8, c: (0.6 + 0.5 + 0)/3 ≈ 0.3667.
func testCycle() *sdk.Cycle {
	return &sdk.Cycle{
		Request: sdk.Request{ID: "req-1"},
		Endpoints: []sdk.Endpoint{
			{ID: "a", State: sdk.EndpointState{KVCacheUsage: 0.7, Waiting: 2, PrefixMatch: 0.3}},
			{ID: "b", State: sdk.EndpointState{KVCacheUsage: 0.1, Waiting: 0, PrefixMatch: 0.5}},
			{ID: "c", State: sdk.EndpointState{KVCacheUsage: 0.4, Waiting: 1, PrefixMatch: 0}},
		},
		Now:  time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Seed: 42,
	}
}

var composite = []float64{0.6 / 3, 2.4 / 3, 1.1 / 3}

var approx = cmpopts.EquateApprox(0, 1e-9)

// byID scores each endpoint from m.
func byID(m map[string]float64) scorerFn {
	return func(_ context.Context, c *sdk.Cycle) ([]float64, error) {
		out := make([]float64, len(c.Endpoints))
		for i, e := range c.Endpoints {
			out[i] = m[e.ID]
		}
		return out, nil
	}
}

// keepIDs keeps the endpoints named.
func keepIDs(ids ...string) filterFn {
	return func(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
		var v sdk.FilterVerdict
		for i, e := range c.Endpoints {
			if slices.Contains(ids, e.ID) {
				v.Kept = append(v.Kept, i)
			}
		}
		return v, nil
	}
}

// boom is a stage's own error, as a plugin process's error arrives at the host.
var boom = &sdk.StatusError{Code: sdk.CodeError, Message: "boom"}

// block waits for the call's deadline.
func block[T any](ctx context.Context) (T, error) {
	<-ctx.Done()
	var zero T
	return zero, ctx.Err()
}

// journal records which stage ran, in order, and what it saw.
type journal struct {
	mu    sync.Mutex
	order []string
	saw   map[string][]sdk.Endpoint
	score map[string][]float64
}

func (j *journal) note(name string, c *sdk.Cycle, scores []float64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.order = append(j.order, name)
	if j.saw == nil {
		j.saw, j.score = map[string][]sdk.Endpoint{}, map[string][]float64{}
	}
	j.saw[name], j.score[name] = slices.Clone(c.Endpoints), scores
}

type counter struct{ n atomic.Int64 }

func (c *counter) filter(f filterFn) filterFn {
	return func(ctx context.Context, cy *sdk.Cycle) (sdk.FilterVerdict, error) { c.n.Add(1); return f(ctx, cy) }
}
func (c *counter) scorer(f scorerFn) scorerFn {
	return func(ctx context.Context, cy *sdk.Cycle) ([]float64, error) { c.n.Add(1); return f(ctx, cy) }
}

func endpointIDs(eps []sdk.Endpoint) []string {
	out := []string{}
	for _, e := range eps {
		out = append(out, e.ID)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
