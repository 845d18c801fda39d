package sdk

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-plugin"
)

// echoStage implements every stage with answers derived from its input, so a round trip through
// the shims shows that each field crossed the wire intact.
type echoStage struct{ configured []byte }

func (e *echoStage) Type() string        { return "echo-stage" }
func (e *echoStage) Description() string { return "answers from its input" }
func (e *echoStage) Configure(params []byte) error {
	if strings.Contains(string(params), "bad") {
		return errors.New(`parameter "bad" is not accepted`)
	}
	e.configured = params
	return nil
}

func (e *echoStage) Produce(_ context.Context, c *Cycle) ([]Prediction, error) {
	out := make([]Prediction, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		out[i] = Prediction{Valid: true, TTFTMs: float64(ep.State.Waiting), TPOTMs: ep.State.KVCacheUsage}
	}
	return out, nil
}

func (e *echoStage) Observe(_ context.Context, s []Sample) (ObserveResult, error) {
	if len(s) > 0 && s[0].EndpointID == "reject" {
		return ObserveResult{}, errors.New("rejected")
	}
	cov := 0.875
	return ObserveResult{Accepted: len(s), Stats: &PredictorStats{ModelVersion: 3, TrainingRows: uint64(100 * len(s)),
		TTFT: TargetStats{Samples: 7, MAPE: 0.04, MAE: 2.5, QuantileCoverage: &cov}, TPOT: TargetStats{Samples: 7, MAPE: 0.02, MAE: 0.1},
		Drift: true}}, nil
}

func (e *echoStage) Filter(_ context.Context, c *Cycle) (FilterVerdict, error) {
	switch c.Request.ID {
	case "fail":
		return FilterVerdict{}, errors.New("filter failed")
	case "panic":
		panic("boom")
	case "out-of-range":
		return FilterVerdict{Kept: []int{len(c.Endpoints)}}, nil
	}
	return FilterVerdict{Kept: []int{len(c.Endpoints) - 1}, Reason: c.Request.Model}, nil
}

func (e *echoStage) Score(_ context.Context, c *Cycle) ([]float64, error) {
	if c.Request.ID == "short" {
		return []float64{1}, nil
	}
	out := make([]float64, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		out[i] = ep.State.PrefixMatch
	}
	return out, nil
}

func (e *echoStage) Admit(_ context.Context, c *Cycle) (AdmitVerdict, error) {
	return AdmitVerdict{Admitted: c.Request.Priority >= 0, Reason: c.Request.SessionID}, nil
}

func (e *echoStage) Pick(_ context.Context, c *Cycle, scores []float64) ([]int, error) {
	out := make([]int, len(scores))
	for i := range scores {
		out[i] = len(scores) - 1 - i
	}
	return out, nil
}

func testCycle(id string) *Cycle {
	return &Cycle{
		Request: Request{
			ID: id, Model: "llama", InputTokens: 900, MaxOutputTokens: 128, Streaming: true,
			SLO: SLO{TTFTMs: 500, TPOTMs: 50}, Priority: -1, SessionID: "s1",
			PrefixBlockHashes: []uint64{1, 2, 3}, Labels: map[string]string{"tenant": "a"},
		},
		Endpoints: []Endpoint{
			{ID: "a:1", State: EndpointState{KVCacheUsage: 0.25, Waiting: 3, Running: 4, InflightRequests: 5,
				PrefillTokensInFlight: 600, DecodeTokensInFlight: 700, PrefixMatch: 0.5, MinRunningTPOTSLOMs: 40, MetricsAgeMs: 12, LastOutputAgeMs: 7.5}},
			{ID: "b:2", Labels: map[string]string{"role": "decode"}, State: EndpointState{KVCacheUsage: 0.75, Waiting: 1, PrefixMatch: 1},
				Prediction: Prediction{Valid: true, TTFTMs: 80, TPOTMs: 9}},
		},
		Now:  time.Date(2026, 11, 22, 1, 2, 3, 4000, time.UTC),
		Seed: 42,
	}
}

// dispense connects a client for stage to an in-process server for impl over a real gRPC connection.
func dispense(t *testing.T, stage Stage, impl Plugin) Configurer {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		stage.String(): &GRPCPlugin{Stage: stage, Impl: impl, Version: "1.2.3"},
	})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(stage.String())
	if err != nil {
		t.Fatalf("dispensing %v: %v", stage, err)
	}
	return raw.(Configurer)
}

func TestPluginServiceRoundTrip(t *testing.T) {
	impl := &echoStage{}
	c := dispense(t, StageScorer, impl)
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Type: "echo-stage", Stage: StageScorer, Version: "1.2.3", Description: "answers from its input"}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
	if err := c.Configure(ctx, []byte(`{"x":1}`)); err != nil || string(impl.configured) != `{"x":1}` {
		t.Errorf("configure: err %v, plugin saw %q", err, impl.configured)
	}
	err = c.Configure(ctx, []byte(`{"bad":1}`))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != CodeInvalidArgument || !strings.Contains(se.Message, `"bad"`) {
		t.Errorf("configure with a bad parameter: got %v, want an invalid-argument status naming it", err)
	}
}

func TestProducerRoundTrip(t *testing.T) {
	c := dispense(t, StageProducer, &echoStage{}).(*ProducerClient)
	got, err := c.ProduceBatch(context.Background(), []*Cycle{testCycle("r1")})
	if err != nil {
		t.Fatal(err)
	}
	want := []Prediction{{Valid: true, TTFTMs: 3, TPOTMs: 0.25}, {Valid: true, TTFTMs: 1, TPOTMs: 0.75}}
	if diff := cmp.Diff(want, got[0].Value); diff != "" || got[0].Err != nil {
		t.Errorf("predictions (-want +got):\n%s err %v", diff, got[0].Err)
	}
	s := Sample{Request: testCycle("r").Request, EndpointID: "a:1", State: testCycle("r").Endpoints[0].State,
		ActualTTFTMs: 120, ActualTPOTMs: 8, OutputTokens: 64, DispatchedAt: time.Unix(100, 0).UTC()}
	cov := 0.875
	wantObs := ObserveResult{Accepted: 2, Stats: &PredictorStats{ModelVersion: 3, TrainingRows: 200,
		TTFT: TargetStats{Samples: 7, MAPE: 0.04, MAE: 2.5, QuantileCoverage: &cov}, TPOT: TargetStats{Samples: 7, MAPE: 0.02, MAE: 0.1},
		Drift: true}}
	if r, err := c.Observe(context.Background(), []Sample{s, s}); err != nil || !cmp.Equal(r, wantObs) {
		t.Errorf("observe: got %+v, %v; want %+v, nil", r, err, wantObs)
	}
	if _, err := c.Observe(context.Background(), []Sample{{EndpointID: "reject"}}); err == nil {
		t.Error("observe: a rejected batch should return the producer's error")
	}
	if diff := cmp.Diff(s, SampleFromProto(SampleToProto(&s))); diff != "" {
		t.Errorf("sample conversion (-want +got):\n%s", diff)
	}
}

func TestFilterRoundTrip(t *testing.T) {
	c := dispense(t, StageFilter, &echoStage{}).(*FilterClient)
	got, err := c.FilterBatch(context.Background(), []*Cycle{testCycle("ok"), testCycle("fail"), testCycle("panic"), testCycle("out-of-range")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(FilterVerdict{Kept: []int{1}, Reason: "llama"}, got[0].Value); diff != "" || got[0].Err != nil {
		t.Errorf("cycle ok (-want +got):\n%s err %v", diff, got[0].Err)
	}
	for i, want := range []string{"", "filter failed", "stage panicked: boom", "endpoint index 2 out of range"} {
		if i == 0 {
			continue
		}
		if got[i].Err == nil || !strings.Contains(got[i].Err.Error(), want) {
			t.Errorf("cycle %d: got error %v, want one containing %q", i, got[i].Err, want)
		}
	}
}

func TestScorerAdmitterPickerRoundTrip(t *testing.T) {
	ctx := context.Background()
	sc := dispense(t, StageScorer, &echoStage{}).(*ScorerClient)
	scores, err := sc.ScoreBatch(ctx, []*Cycle{testCycle("r"), testCycle("short")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{0.5, 1}, scores[0].Value); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
	if scores[1].Err == nil || !strings.Contains(scores[1].Err.Error(), "1 scores for 2 endpoints") {
		t.Errorf("short scores: got %v, want a length error", scores[1].Err)
	}

	ad := dispense(t, StageAdmitter, &echoStage{}).(*AdmitterClient)
	verdicts, err := ad.AdmitBatch(ctx, []*Cycle{testCycle("r")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(AdmitVerdict{Admitted: false, Reason: "s1"}, verdicts[0].Value); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}

	pk := dispense(t, StagePicker, &echoStage{}).(*PickerClient)
	orders, err := pk.PickBatch(ctx, []*Cycle{testCycle("r")}, [][]float64{{0.1, 0.9}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 0}, orders[0].Value); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if _, err := pk.PickBatch(ctx, []*Cycle{testCycle("r")}, nil); err == nil {
		t.Error("pick with missing scores should fail")
	}
}

func TestCycleConversion(t *testing.T) {
	c := testCycle("r")
	got, err := CycleFromProto(CycleToProto(c))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got, cmpopts.IgnoreUnexported(Cycle{})); diff != "" {
		t.Errorf("cycle round trip (-want +got):\n%s", diff)
	}
	p := CycleToProto(c)
	p.Endpoints.States.Waiting = p.Endpoints.States.Waiting[:1]
	if _, err := CycleFromProto(p); err == nil || !strings.Contains(err.Error(), `column "waiting" has 1 entries for 2 endpoints`) {
		t.Errorf("short column: got %v", err)
	}
	p = CycleToProto(c)
	p.Endpoints.States = nil // a host that sends no state columns: everything reads as zero
	got, err = CycleFromProto(p)
	if err != nil || got.Endpoints[0].State != (EndpointState{}) {
		t.Errorf("absent columns: got %+v, %v; want zero state", got.Endpoints[0].State, err)
	}
}

func TestGRPCServerRejectsWrongStage(t *testing.T) {
	type onlyPlugin struct{ Plugin }
	p := &GRPCPlugin{Stage: StageFilter, Impl: onlyPlugin{&echoStageNoStages{}}}
	if err := p.GRPCServer(nil, nil); err == nil || !strings.Contains(err.Error(), "does not implement stage filter") {
		t.Errorf("got %v", err)
	}
}

type echoStageNoStages struct{}

func (echoStageNoStages) Type() string           { return "nothing" }
func (echoStageNoStages) Description() string    { return "" }
func (echoStageNoStages) Configure([]byte) error { return nil }

func TestSealedCycleIsReusedUntilCopied(t *testing.T) {
	c := testCycle("r")
	c.Seal()
	if w := wireOf(c); w.msg != c.wire.msg || w.bare != c.wire.bare {
		t.Fatal("a sealed cycle should send its cached encoding")
	}
	if b := c.wire.bare; b.GetId() != "r" || b.GetInputTokens() != 900 || len(b.GetPrefixBlockHashes()) != 0 ||
		len(c.wire.msg.GetRequest().GetPrefixBlockHashes()) != 3 {
		t.Errorf("the sealed request without hashes is %v; the whole one %v", b, c.wire.msg.GetRequest())
	}
	cp := *c
	cp.Seed = 99
	if got := wireOf(&cp).msg; got == c.wire.msg || got.GetSeed() != 99 {
		t.Errorf("a copy of a sealed cycle must be encoded afresh, got seed %d", got.GetSeed())
	}
}
