package predictor

import (
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestPrefillCandidatesArePredictedAsTheClientSeesThem(t *testing.T) {
	c := &sdk.Cycle{
		Request: sdk.Request{Streaming: true, Disaggregation: sdk.Disaggregation{Hop: sdk.HopPrefill, DecodeEndpoint: "d",
			DecodeTTFTMs: 40, DecodeTPOTMs: 12}},
		Endpoints: []sdk.Endpoint{{ID: "p1"}, {ID: "d"}, {ID: "p2"}},
	}
	out := []sdk.Prediction{
		{Valid: true, TTFTMs: 100, TPOTMs: 30, TTFTAfterMs: 130, TPOTAfterMs: 35},
		{Valid: true, TTFTMs: 300, TPOTMs: 20, TTFTAfterMs: 320, TPOTAfterMs: 22}, // the decode endpoint, whole
		{Valid: true, TTFTMs: 50, TPOTMs: 9},
	}
	asClientSees(c, out)
	want := []sdk.Prediction{
		{Valid: true, TTFTMs: 140, TPOTMs: 12, TTFTAfterMs: 170, TPOTAfterMs: 12},
		{Valid: true, TTFTMs: 300, TPOTMs: 20, TTFTAfterMs: 320, TPOTAfterMs: 22},
		{Valid: true, TTFTMs: 90, TPOTMs: 12},
	}
	for i := range out {
		if out[i] != want[i] {
			t.Errorf("endpoint %s: %+v, want %+v", c.Endpoints[i].ID, out[i], want[i])
		}
	}
	// A decode cycle, or a prefill cycle whose decode hop has no prediction, is left as it is.
	for _, d := range []sdk.Disaggregation{{Hop: sdk.HopDecode}, {Hop: sdk.HopPrefill, DecodeEndpoint: "d"}} {
		c.Request.Disaggregation = d
		got := []sdk.Prediction{{Valid: true, TTFTMs: 100}, {Valid: true, TTFTMs: 300}, {Valid: true, TTFTMs: 50}}
		if asClientSees(c, got); got[0].TTFTMs != 100 || got[2].TTFTMs != 50 {
			t.Errorf("%+v: predictions changed to %+v", d, got)
		}
	}
}

func TestPrefillHopSamples(t *testing.T) {
	r := sdk.Request{Disaggregation: sdk.Disaggregation{Hop: sdk.HopPrefill, DecodeEndpoint: "d", DecodeTTFTMs: 40, DecodeTPOTMs: 12}}
	s := sdk.Sample{Request: r, EndpointID: "p", ActualTTFTMs: 95, ActualTPOTMs: 5, OutputTokens: 1,
		Predicted: sdk.Prediction{Valid: true, TTFTMs: 140, TPOTMs: 12}}
	// An unstreamed prefill hop's answer is its first token: a TTFT to learn, no TPOT.
	if ttftTarget(&s) != 95 || tpotTarget(&s) != 0 {
		t.Errorf("prefill hop targets %v and %v, want 95 and 0", ttftTarget(&s), tpotTarget(&s))
	}
	if ownShare(&s); s.Predicted.TTFTMs != 100 || s.Predicted.TPOTMs != 0 {
		t.Errorf("own share of the prediction %+v, want TTFT 100 and no TPOT", s.Predicted)
	}
	whole := sdk.Sample{Request: r, EndpointID: "d", ActualTTFTMs: 95, Predicted: sdk.Prediction{Valid: true, TTFTMs: 140}}
	if ownShare(&whole); whole.Predicted.TTFTMs != 140 || ttftTarget(&whole) != 0 {
		t.Errorf("the decode endpoint served whole: prediction %v, unstreamed TTFT target %v; want 140 and 0", whole.Predicted.TTFTMs, ttftTarget(&whole))
	}
}
