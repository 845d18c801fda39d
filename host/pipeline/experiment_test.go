package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// build builds a pipeline of built-in stages from yaml and closes it when the test ends.
func buildYAML(t *testing.T, yaml string) *pipeline.Pipeline {
	t.Helper()
	cfg, err := config.Parse("experiment-test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Build(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// twoEndpoints: a has the shorter queue, b the emptier KV cache, so the queue scorer prefers a
// and the KV-cache scorer prefers b.
func twoEndpoints(session string, n int) *sdk.Cycle {
	return &sdk.Cycle{
		Request: sdk.Request{ID: fmt.Sprint("req-", n), SessionID: session},
		Now:     time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		Seed:    uint64(n),
		Endpoints: []sdk.Endpoint{
			{ID: "a", State: sdk.EndpointState{Waiting: 0, KVCacheUsage: 0.9}},
			{ID: "b", State: sdk.EndpointState{Waiting: 6, KVCacheUsage: 0.1}},
		},
	}
}

const abScorers = `
plugins:
  - {name: queue, type: queue-scorer}
  - {name: kv, type: kv-cache-utilization-scorer}
  - {name: pick, type: max-score-picker}
pipeline:
  scorers:
    - arms:
        - {name: by-queue, pluginRef: queue}
        - {name: by-kv, pluginRef: kv, weight: 1}
  picker: {pluginRef: pick}
`

func TestArmsAreStickyAndServeTheirPlugin(t *testing.T) {
	p := buildYAML(t, abScorers)
	seen := map[string]int{}
	for s := range 200 {
		session := fmt.Sprint("session-", s)
		first := ""
		for n := range 3 {
			tr := p.Run(context.Background(), twoEndpoints(session, s*10+n))
			if tr.Experiment != "scorers.0" {
				t.Fatalf("trace experiment %q, want scorers.0", tr.Experiment)
			}
			if n == 0 {
				first = tr.Arm
				seen[first]++
			} else if tr.Arm != first {
				t.Fatalf("session %s: arm %q, then %q", session, first, tr.Arm)
			}
			wantPlugin, wantPick := "queue", "a"
			if tr.Arm == "by-kv" {
				wantPlugin, wantPick = "kv", "b"
			}
			if tr.Scorers[0].Plugin != wantPlugin || tr.OrderIDs()[0] != wantPick {
				t.Fatalf("arm %s scored by %s and picked %s, want %s and %s", tr.Arm, tr.Scorers[0].Plugin, tr.OrderIDs()[0], wantPlugin, wantPick)
			}
		}
	}
	if seen["by-queue"] < 70 || seen["by-kv"] < 70 || seen["by-queue"]+seen["by-kv"] != 200 {
		t.Errorf("sessions per arm %v, want about 100 each", seen)
	}
	// Without a session, the request id decides.
	a := p.Run(context.Background(), twoEndpoints("", 7)).Arm
	if b := p.Run(context.Background(), twoEndpoints("", 7)).Arm; a != b || a == "" {
		t.Errorf("the same request id got arms %q and %q", a, b)
	}
}

func TestOutcomesReachTheirArm(t *testing.T) {
	p := buildYAML(t, abScorers)
	for s := range 60 {
		tr := p.Run(context.Background(), twoEndpoints(fmt.Sprint("s", s), s))
		ttft := 100.0
		if tr.Arm == "by-kv" {
			ttft = 300
		}
		p.Record(tr, experiment.Outcome{TTFTMs: ttft, SLOTTFTMs: 200})
	}
	rep, ok := p.ExperimentReport()
	if !ok || rep.Slot != "scorers.0" || len(rep.Arms) != 2 {
		t.Fatalf("report %+v", rep)
	}
	q, kv := rep.Arms[0], rep.Arms[1]
	if q.Name != "by-queue" || q.Requests+kv.Requests != 60 || q.TTFTp50Ms != 100 || kv.TTFTp50Ms != 300 ||
		q.SLOAttainment != 1 || kv.SLOAttainment != 0 {
		t.Errorf("arms %+v / %+v", q, kv)
	}
	if c := kv.VsBaseline; c == nil || c.TTFTp50DiffMs.Estimate != 200 || !c.SLOAttainmentDiff.Significant {
		t.Errorf("comparison %+v", kv.VsBaseline)
	}
}

// waitShadow waits until the shadow has judged n cycles and returns the report.
func waitShadow(t *testing.T, p *pipeline.Pipeline, n int64) *experiment.ShadowReport {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rep, _ := p.ExperimentReport()
		if rep.Shadow != nil && rep.Shadow.Cycles >= n {
			return rep.Shadow
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shadow judged %+v cycles, want %d", rep.Shadow, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestShadowScorerIsRecordedNotEnacted(t *testing.T) {
	p := buildYAML(t, `
plugins:
  - {name: queue, type: queue-scorer}
  - {name: kv, type: kv-cache-utilization-scorer}
pipeline:
  scorers:
    - pluginRef: queue
      shadow: {name: kv-shadow, pluginRef: kv}
`)
	for n := range 20 {
		tr := p.Run(context.Background(), twoEndpoints("", n))
		if tr.OrderIDs()[0] != "a" || len(tr.Scorers) != 1 || tr.Scorers[0].Plugin != "queue" || tr.Arm != "" {
			t.Fatalf("the shadow changed the decision: %v by %s (arm %q)", tr.OrderIDs(), tr.Scorers[0].Plugin, tr.Arm)
		}
	}
	sh := waitShadow(t, p, 20)
	if sh.Name != "kv-shadow" || sh.Agreed != 0 || sh.AgreementRate != 0 || len(sh.LastDisagreements) != 20 {
		t.Fatalf("shadow %+v", sh)
	}
	if d := sh.LastDisagreements[0]; d.Primary != "top a" || d.Shadow != "top b" {
		t.Errorf("disagreement %+v, want the enacted top a against the shadow's top b", d)
	}
	rep, _ := p.ExperimentReport()
	if len(rep.Arms) != 0 {
		t.Errorf("a shadow alone has no arms to compare, got %+v", rep.Arms)
	}
}

func TestShadowPickerAgreement(t *testing.T) {
	// The round-robin shadow picks a and b in turn where max-score always picks a: half agree.
	p := buildYAML(t, `
plugins:
  - {name: queue, type: queue-scorer}
  - {name: best, type: max-score-picker}
  - {name: rr, type: round-robin-picker}
pipeline:
  scorers: [{pluginRef: queue}]
  picker:
    pluginRef: best
    shadow: {pluginRef: rr}
`)
	for n := range 40 {
		p.Run(context.Background(), twoEndpoints("", n))
	}
	sh := waitShadow(t, p, 40)
	if sh.Name != "rr" || sh.Agreed != 20 {
		t.Errorf("shadow %+v, want 20 of 40 in agreement", sh)
	}
	for _, d := range sh.LastDisagreements {
		if d.Primary != "a" || d.Shadow != "b" || strings.HasPrefix(d.Shadow, "failed") {
			t.Errorf("disagreement %+v", d)
		}
	}
}

func TestShadowProducerRerunsTheDecision(t *testing.T) {
	// The enacted producer predicts a fast, the shadow predicts b fast; a scorer that prefers
	// the lowest predicted TTFT then picks a, and would have picked b with the shadow's numbers.
	predict := func(fast string) sdk.Producer {
		return testProducer{f: func(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
			out := make([]sdk.Prediction, len(c.Endpoints))
			for i, e := range c.Endpoints {
				out[i] = sdk.Prediction{Valid: true, TTFTMs: 500, TPOTMs: 10}
				if e.ID == fast {
					out[i].TTFTMs = 50
				}
			}
			return out, nil
		}}
	}
	fastest := testScorer{f: func(_ context.Context, c *sdk.Cycle) ([]float64, error) {
		out := make([]float64, len(c.Endpoints))
		for i, e := range c.Endpoints {
			out[i] = 50 / e.Prediction.TTFTMs
		}
		return out, nil
	}}
	impls := map[string]sdk.Plugin{"enacted": predict("a"), "shadow": predict("b"), "fastest": fastest}
	cfg, err := config.Parse("test.yaml", []byte(`
plugins:
  - {name: enacted, type: test-producer}
  - {name: shadow, type: test-producer}
  - {name: fastest, type: test-scorer}
  - {name: pick, type: max-score-picker}
pipeline:
  producer: {pluginRef: enacted, shadow: {pluginRef: shadow}}
  scorers: [{pluginRef: fastest}]
  picker: {pluginRef: pick}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.BuildInProcess(context.Background(), cfg, impls, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	for n := range 10 {
		if tr := p.Run(context.Background(), twoEndpoints("", n)); tr.OrderIDs()[0] != "a" || tr.Producer.Plugin != "enacted" {
			t.Fatalf("enacted %v by %s, want a by the enacted producer", tr.OrderIDs(), tr.Producer.Plugin)
		}
	}
	// A replayed cycle that carries predictions skips the producer: nothing for the shadow.
	replay := twoEndpoints("", 99)
	replay.Endpoints[0].Prediction = sdk.Prediction{Valid: true, TTFTMs: 50}
	p.Run(context.Background(), replay)

	sh := waitShadow(t, p, 10)
	if sh.Cycles != 10 || sh.Agreed != 0 {
		t.Fatalf("shadow %+v, want 10 cycles, none in agreement", sh)
	}
	if d := sh.LastDisagreements[9]; d.Primary != "a" || d.Shadow != "b" {
		t.Errorf("disagreement %+v, want a enacted and b under the shadow's predictions", d)
	}
}
