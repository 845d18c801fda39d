package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Round trips through both sides of the protocol: the plugin's server shims (this package, behind
// the Serve… helpers) and the host's clients (package transport), over a real gRPC connection.

// echoStage implements every stage with answers derived from its input, so a round trip through
// the shims shows that each field crossed the wire intact.
type echoStage struct {
	configured []byte
	observed   chan []sdk.Sample // when set, receives the samples of each accepted Observe
}

func (e *echoStage) Type() string        { return "echo-stage" }
func (e *echoStage) Description() string { return "answers from its input" }
func (e *echoStage) Configure(params []byte) error {
	if strings.Contains(string(params), "bad") {
		return errors.New(`parameter "bad" is not accepted`)
	}
	e.configured = params
	return nil
}

func (e *echoStage) Produce(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
	out := make([]sdk.Prediction, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		// A TTFT spread but no TPOT spread: the producer's answer carries one spread column.
		out[i] = sdk.Prediction{Valid: true, TTFTMs: float64(ep.State.Waiting), TPOTMs: ep.State.KVCacheUsage, TTFTSpread: ep.State.PrefixMatch}
	}
	return out, nil
}

func (e *echoStage) Observe(_ context.Context, s []sdk.Sample) (sdk.ObserveResult, error) {
	if len(s) > 0 && s[0].EndpointID == "reject" {
		return sdk.ObserveResult{}, errors.New("rejected")
	}
	if e.observed != nil {
		e.observed <- s
	}
	cov := 0.875
	return sdk.ObserveResult{Accepted: len(s), Stats: &sdk.PredictorStats{ModelVersion: 3, TrainingRows: uint64(100 * len(s)),
		TTFT: sdk.TargetStats{Samples: 7, MAPE: 0.04, MAE: 2.5, QuantileCoverage: &cov}, TPOT: sdk.TargetStats{Samples: 7, MAPE: 0.02, MAE: 0.1},
		Drift: true}}, nil
}

func (e *echoStage) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	switch c.Request.ID {
	case "fail":
		return sdk.FilterVerdict{}, errors.New("filter failed")
	case "panic":
		panic("boom")
	case "out-of-range":
		return sdk.FilterVerdict{Kept: []int{len(c.Endpoints)}}, nil
	}
	return sdk.FilterVerdict{Kept: []int{len(c.Endpoints) - 1}, Reason: c.Request.Model}, nil
}

func (e *echoStage) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	if c.Request.ID == "short" {
		return []float64{1}, nil
	}
	out := make([]float64, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		out[i] = ep.State.PrefixMatch
	}
	return out, nil
}

func (e *echoStage) Admit(_ context.Context, c *sdk.Cycle) (sdk.AdmitVerdict, error) {
	return sdk.AdmitVerdict{Admitted: c.Request.Priority >= 0, Reason: c.Request.SessionID}, nil
}

func (e *echoStage) Pick(_ context.Context, c *sdk.Cycle, scores []float64) ([]int, error) {
	out := make([]int, len(scores))
	for i := range scores {
		out[i] = len(scores) - 1 - i
	}
	return out, nil
}

func (e *echoStage) Detect(_ context.Context, c *sdk.Cycle) (sdk.SaturationVerdict, error) {
	switch c.Request.ID {
	case "short":
		return sdk.SaturationVerdict{Room: []int{1}}, nil
	case "wide":
		return sdk.SaturationVerdict{Room: []int{-3, math.MaxInt64}, WaitMs: 0}, nil
	case "short-slots":
		return sdk.SaturationVerdict{Room: []int{1, 1}, Slots: []int{32}}, nil
	case "negative-slots":
		return sdk.SaturationVerdict{Room: []int{1, 1}, Slots: []int{32, -1}}, nil
	}
	room := make([]int, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		room[i] = int(ep.State.Waiting)
	}
	return sdk.SaturationVerdict{Room: room, WaitMs: c.Request.SLO.TTFTMs, Reason: c.Request.SessionID, Slots: []int{32, 0}}, nil
}

func (e *echoStage) Order(_ context.Context, c *sdk.Cycle) (sdk.OrderKey, error) {
	if c.Request.ID == "fail" {
		return sdk.OrderKey{}, errors.New("no key")
	}
	k := sdk.OrderKey{Rank: c.Now.UnixNano() + c.Request.InputTokens, Flow: c.Request.SessionID}
	if c.Request.Priority < 0 {
		k.HopelessAfter = c.Now.Add(time.Second)
	}
	return k, nil
}

func testCycle(id string) *sdk.Cycle {
	return &sdk.Cycle{
		Request: sdk.Request{
			ID: id, Model: "llama", InputTokens: 900, MaxOutputTokens: 128, Streaming: true,
			SLO: sdk.SLO{TTFTMs: 500, TPOTMs: 50}, Priority: -1, SessionID: "s1",
			PrefixBlockHashes: []uint64{1, 2, 3}, Labels: map[string]string{"tenant": "a"},
		},
		Endpoints: []sdk.Endpoint{
			{ID: "a:1", State: sdk.EndpointState{KVCacheUsage: 0.25, Waiting: 3, Running: 4, InflightRequests: 5,
				PrefillTokensInFlight: 600, DecodeTokensInFlight: 700, PrefixMatch: 0.5, MinRunningTPOTSLOMs: 40, MetricsAgeMs: 12, LastOutputAgeMs: 7.5,
				DispatchedSinceScrape: 2}},
			{ID: "b:2", Labels: map[string]string{"role": "decode"}, State: sdk.EndpointState{KVCacheUsage: 0.75, Waiting: 1, PrefixMatch: 1},
				Prediction: sdk.Prediction{Valid: true, TTFTMs: 80, TPOTMs: 9}},
		},
		Now:  time.Date(2026, 11, 22, 1, 2, 3, 4000, time.UTC),
		Seed: 42,
	}
}

// bothHalves is one stage's go-plugin glue with the plugin's half (sdk's) serving and the host's
// half (transport's) dispensing, as plugin.TestPluginGRPCConn wants them in one plugin.
type bothHalves struct {
	plugin.NetRPCUnsupportedPlugin
	server, client plugin.GRPCPlugin
}

func (b bothHalves) GRPCServer(br *plugin.GRPCBroker, s *grpc.Server) error {
	return b.server.GRPCServer(br, s)
}

func (b bothHalves) GRPCClient(ctx context.Context, br *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return b.client.GRPCClient(ctx, br, c)
}

// dispense connects a client for stage to an in-process server for impl over a real gRPC connection.
func dispense(t *testing.T, stage sdk.Stage, impl sdk.Plugin) transport.Configurer {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		stage.String(): bothHalves{server: sdk.NewServerPlugin(stage, impl, "1.2.3"), client: &transport.GRPCPlugin{Stage: stage}},
	})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(stage.String())
	if err != nil {
		t.Fatalf("dispensing %v: %v", stage, err)
	}
	return raw.(transport.Configurer)
}

func TestPluginServiceRoundTrip(t *testing.T) {
	impl := &echoStage{}
	c := dispense(t, sdk.StageScorer, impl)
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := sdk.Info{Type: "echo-stage", Stage: sdk.StageScorer, Version: "1.2.3", Description: "answers from its input"}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
	if err := c.Configure(ctx, []byte(`{"x":1}`)); err != nil || string(impl.configured) != `{"x":1}` {
		t.Errorf("configure: err %v, plugin saw %q", err, impl.configured)
	}
	err = c.Configure(ctx, []byte(`{"bad":1}`))
	var se *sdk.StatusError
	if !errors.As(err, &se) || se.Code != sdk.CodeInvalidArgument || !strings.Contains(se.Message, `"bad"`) {
		t.Errorf("configure with a bad parameter: got %v, want an invalid-argument status naming it", err)
	}
}

func TestProducerRoundTrip(t *testing.T) {
	impl := &echoStage{observed: make(chan []sdk.Sample, 1)}
	c := dispense(t, sdk.StageProducer, impl).(*transport.ProducerClient)
	got, err := c.ProduceBatch(context.Background(), []*sdk.Cycle{testCycle("r1")})
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.Prediction{{Valid: true, TTFTMs: 3, TPOTMs: 0.25, TTFTSpread: 0.5}, {Valid: true, TTFTMs: 1, TPOTMs: 0.75, TTFTSpread: 1}}
	if diff := cmp.Diff(want, got[0].Value); diff != "" || got[0].Err != nil {
		t.Errorf("predictions (-want +got):\n%s err %v", diff, got[0].Err)
	}
	s := sdk.Sample{Request: testCycle("r").Request, EndpointID: "a:1", State: testCycle("r").Endpoints[0].State,
		ActualTTFTMs: 120, ActualTPOTMs: 8, OutputTokens: 64, DispatchedAt: time.Unix(100, 0).UTC()}
	cov := 0.875
	wantObs := sdk.ObserveResult{Accepted: 2, Stats: &sdk.PredictorStats{ModelVersion: 3, TrainingRows: 200,
		TTFT: sdk.TargetStats{Samples: 7, MAPE: 0.04, MAE: 2.5, QuantileCoverage: &cov}, TPOT: sdk.TargetStats{Samples: 7, MAPE: 0.02, MAE: 0.1},
		Drift: true}}
	if r, err := c.Observe(context.Background(), []sdk.Sample{s, s}); err != nil || !cmp.Equal(r, wantObs) {
		t.Errorf("observe: got %+v, %v; want %+v, nil", r, err, wantObs)
	}
	if _, err := c.Observe(context.Background(), []sdk.Sample{{EndpointID: "reject"}}); err == nil {
		t.Error("observe: a rejected batch should return the producer's error")
	}
	select { // Observe answers after the producer took the samples
	case got := <-impl.observed:
		if diff := cmp.Diff([]sdk.Sample{s, s}, got); diff != "" {
			t.Errorf("samples the producer received (-want +got):\n%s", diff)
		}
	default:
		t.Error("the producer received no samples")
	}
}

func TestFilterRoundTrip(t *testing.T) {
	c := dispense(t, sdk.StageFilter, &echoStage{}).(*transport.FilterClient)
	got, err := c.FilterBatch(context.Background(), []*sdk.Cycle{testCycle("ok"), testCycle("fail"), testCycle("panic"), testCycle("out-of-range")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sdk.FilterVerdict{Kept: []int{1}, Reason: "llama"}, got[0].Value); diff != "" || got[0].Err != nil {
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
	sc := dispense(t, sdk.StageScorer, &echoStage{}).(*transport.ScorerClient)
	scores, err := sc.ScoreBatch(ctx, []*sdk.Cycle{testCycle("r"), testCycle("short")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(transport.Scored{Scores: []float64{0.5, 1}}, scores[0].Value); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
	if scores[1].Err == nil || !strings.Contains(scores[1].Err.Error(), "1 scores for 2 endpoints") {
		t.Errorf("short scores: got %v, want a length error", scores[1].Err)
	}

	ad := dispense(t, sdk.StageAdmitter, &echoStage{}).(*transport.AdmitterClient)
	verdicts, err := ad.AdmitBatch(ctx, []*sdk.Cycle{testCycle("r")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sdk.AdmitVerdict{Admitted: false, Reason: "s1"}, verdicts[0].Value); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}

	pk := dispense(t, sdk.StagePicker, &echoStage{}).(*transport.PickerClient)
	orders, err := pk.PickBatch(ctx, []*sdk.Cycle{testCycle("r")}, [][]float64{{0.1, 0.9}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 0}, orders[0].Value); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if _, err := pk.PickBatch(ctx, []*sdk.Cycle{testCycle("r")}, nil, nil); err == nil {
		t.Error("pick with missing scores should fail")
	}
}

// Flow control's two stages: the room counts, the wait and the reason cross intact; a verdict of
// the wrong length is that cycle's error; a negative count arrives as 0 and one beyond what the
// host reads is capped, not wrapped; an order key's rank, hopeless-after time and flow cross
// intact, and a stage error is that cycle's.
func TestDetectorOrderRoundTrip(t *testing.T) {
	ctx := context.Background()
	dc := dispense(t, sdk.StageDetector, &echoStage{}).(*transport.DetectorClient)
	verdicts, err := dc.DetectBatch(ctx, []*sdk.Cycle{testCycle("r"), testCycle("short"), testCycle("wide"),
		testCycle("short-slots"), testCycle("negative-slots")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sdk.SaturationVerdict{Room: []int{3, 1}, WaitMs: 500, Reason: "s1", Slots: []int{32, 0}}, verdicts[0].Value); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
	if verdicts[1].Err == nil || !strings.Contains(verdicts[1].Err.Error(), "1 room counts for 2 endpoints") {
		t.Errorf("short verdict: got %v, want a length error", verdicts[1].Err)
	}
	if diff := cmp.Diff([]int{0, math.MaxInt32}, verdicts[2].Value.Room); diff != "" || verdicts[2].Err != nil {
		t.Errorf("out-of-range counts (-want +got):\n%s (%v)", diff, verdicts[2].Err)
	}
	if verdicts[2].Value.Slots != nil {
		t.Errorf("a verdict without slots arrived with %v", verdicts[2].Value.Slots)
	}
	for i, want := range map[int]string{3: "1 slot counts for 2 endpoints", 4: "-1 slots for endpoint 1"} {
		if verdicts[i].Err == nil || !strings.Contains(verdicts[i].Err.Error(), want) {
			t.Errorf("verdict %d: got %v, want an error saying %q", i, verdicts[i].Err, want)
		}
	}

	oc := dispense(t, sdk.StageOrder, &echoStage{}).(*transport.OrderClient)
	keys, err := oc.OrderBatch(ctx, []*sdk.Cycle{testCycle("r"), testCycle("fail")})
	if err != nil {
		t.Fatal(err)
	}
	now := testCycle("r").Now
	if diff := cmp.Diff(sdk.OrderKey{Rank: now.UnixNano() + 900, HopelessAfter: now.Add(time.Second), Flow: "s1"}, keys[0].Value); diff != "" {
		t.Errorf("key (-want +got):\n%s", diff)
	}
	if keys[1].Err == nil || !strings.Contains(keys[1].Err.Error(), "no key") {
		t.Errorf("failing order: got %v, want the stage's error", keys[1].Err)
	}
}

// The predictions' optional columns (after and spread) cross the wire both ways: the host's
// encoding of a cycle to the plugin side's decoding, and a producer's encoding of its answer to the
// host's decoding. A column whose entries are all zero is not sent, and one of another length than
// the endpoints is an invalid cycle.
func TestPredictionColumns(t *testing.T) {
	c := testCycle("r")
	c.Endpoints[0].Prediction = sdk.Prediction{Valid: true, TTFTMs: 200, TPOTMs: 20, TTFTAfterMs: 260, TPOTAfterMs: 21}
	c.Endpoints[1].Prediction.TTFTSpread = 0.35 // endpoint 0's 0: too few samples there
	p := transport.CycleToProto(c)
	pr := p.GetEndpoints().GetPredictions()
	if diff := cmp.Diff([]float64{0, 0.35}, pr.GetTtftSpread()); diff != "" || pr.GetTpotSpread() != nil {
		t.Errorf("spread columns on the wire: ttft_spread (-want +got):\n%s tpot_spread %v, want none", diff, pr.GetTpotSpread())
	}
	got, err := sdk.CycleFromProto(p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got, cmpopts.IgnoreUnexported(sdk.Cycle{})); diff != "" {
		t.Errorf("cycle round trip (-want +got):\n%s", diff)
	}
	c.Endpoints[0].Prediction.TPOTSpread = 0.2
	got, err = sdk.CycleFromProto(transport.CycleToProto(c))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got, cmpopts.IgnoreUnexported(sdk.Cycle{})); diff != "" {
		t.Errorf("both spreads: cycle round trip (-want +got):\n%s", diff)
	}

	// The producer's direction: spreads where it has them, and no column where it has none.
	preds := []sdk.Prediction{{Valid: true, TTFTMs: 100, TPOTMs: 10, TPOTSpread: 0.1}, {Valid: true, TTFTMs: 90, TPOTMs: 9}}
	out := sdk.PredictionsToProto(preds)
	if diff := cmp.Diff([]float64{0.1, 0}, out.GetTpotSpread()); diff != "" || out.GetTtftSpread() != nil || out.GetTtftAfterMs() != nil || out.GetTpotAfterMs() != nil {
		t.Errorf("the producer's columns: tpot_spread (-want +got):\n%s ttft_spread %v, after %v %v, want none",
			diff, out.GetTtftSpread(), out.GetTtftAfterMs(), out.GetTpotAfterMs())
	}
	if out := sdk.PredictionsToProto(make([]sdk.Prediction, 3)); out.GetTtftSpread() != nil || out.GetTpotSpread() != nil {
		t.Errorf("no spreads: columns %v %v sent", out.GetTtftSpread(), out.GetTpotSpread())
	}

	for _, tt := range []struct {
		name string
		cut  func(pr *pb.Predictions)
	}{
		{"predictions.ttft_spread", func(pr *pb.Predictions) { pr.TtftSpread = pr.TtftSpread[:1] }},
		{"predictions.tpot_spread", func(pr *pb.Predictions) { pr.TpotSpread = []float64{0.2} }},
	} {
		p := transport.CycleToProto(c)
		tt.cut(p.GetEndpoints().GetPredictions())
		want := fmt.Sprintf("column %q has 1 entries for 2 endpoints", tt.name)
		if _, err := sdk.CycleFromProto(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("short %s: got %v, want an error saying %s", tt.name, err, want)
		}
	}
}

func TestCycleConversion(t *testing.T) {
	c := testCycle("r")
	got, err := sdk.CycleFromProto(transport.CycleToProto(c))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got, cmpopts.IgnoreUnexported(sdk.Cycle{})); diff != "" {
		t.Errorf("cycle round trip (-want +got):\n%s", diff)
	}
	p := transport.CycleToProto(c)
	p.Endpoints.States.Waiting = p.Endpoints.States.Waiting[:1]
	if _, err := sdk.CycleFromProto(p); err == nil || !strings.Contains(err.Error(), `column "waiting" has 1 entries for 2 endpoints`) {
		t.Errorf("short column: got %v", err)
	}
	p = transport.CycleToProto(c)
	p.Endpoints.States = nil // a host that sends no state columns: everything reads as zero
	got, err = sdk.CycleFromProto(p)
	if err != nil || got.Endpoints[0].State != (sdk.EndpointState{}) {
		t.Errorf("absent columns: got %+v, %v; want zero state", got.Endpoints[0].State, err)
	}
}
