package transport

import (
	"fmt"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"github.com/google/go-cmp/cmp"
)

// The host's decoding of a producer's answer keeps the optional columns (after and spread) where
// the producer sent them and reads zeros where it did not (an older producer); one of another
// length than the endpoints fails the cycle, naming the column.
func TestPredictionsFromProto(t *testing.T) {
	p := &pb.Predictions{Valid: []bool{true, true}, TtftMs: []float64{100, 90}, TpotMs: []float64{10, 0},
		TtftAfterMs: []float64{130, 0}, TtftSpread: []float64{0.4, 0}, TpotSpread: []float64{0, 0.15}}
	got, err := predictionsFromProto(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.Prediction{{Valid: true, TTFTMs: 100, TPOTMs: 10, TTFTAfterMs: 130, TTFTSpread: 0.4},
		{Valid: true, TTFTMs: 90, TPOTSpread: 0.15}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("predictions (-want +got):\n%s", diff)
	}
	old := &pb.Predictions{Valid: []bool{true, false}, TtftMs: []float64{100, 0}, TpotMs: []float64{10, 0}}
	if got, err := predictionsFromProto(old, 2); err != nil || got[0].TTFTSpread != 0 || got[0].TPOTSpread != 0 {
		t.Errorf("an older producer's answer: got %+v, %v; want spreads 0", got, err)
	}
	for name, set := range map[string]func(*pb.Predictions){
		"predictions.ttft_after_ms": func(p *pb.Predictions) { p.TtftAfterMs = []float64{1} },
		"predictions.ttft_spread":   func(p *pb.Predictions) { p.TtftSpread = []float64{0.3} },
		"predictions.tpot_spread":   func(p *pb.Predictions) { p.TpotSpread = []float64{0.3} },
	} {
		p := &pb.Predictions{Valid: []bool{true, true}, TtftMs: []float64{100, 90}, TpotMs: []float64{10, 9}}
		set(p)
		want := fmt.Sprintf("column %q has 1 entries for 2 endpoints", name)
		if _, err := predictionsFromProto(p, 2); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a short %s: got %v, want an error saying %s", name, err, want)
		}
	}
}

// The host's encoding of a cycle sends a spread column only when one of its entries is not zero,
// as it does the after columns.
func TestCycleToProtoSpreads(t *testing.T) {
	c := testCycle("r")
	pr := CycleToProto(c).GetEndpoints().GetPredictions()
	if pr.GetTtftSpread() != nil || pr.GetTpotSpread() != nil || pr.GetTtftAfterMs() != nil || pr.GetTpotAfterMs() != nil {
		t.Errorf("a cycle without spreads or after-predictions carries columns %v", pr)
	}
	c.Endpoints[0].Prediction.TPOTSpread = 0.25
	pr = CycleToProto(c).GetEndpoints().GetPredictions()
	if diff := cmp.Diff([]float64{0.25, 0}, pr.GetTpotSpread()); diff != "" || pr.GetTtftSpread() != nil {
		t.Errorf("tpot_spread (-want +got):\n%s ttft_spread %v, want none", diff, pr.GetTtftSpread())
	}
}
