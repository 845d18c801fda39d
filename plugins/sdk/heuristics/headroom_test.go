package heuristics

import (
	"math"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestHeadroomOf(t *testing.T) {
	inf := math.Inf(1)
	slo := sdk.SLO{TTFTMs: 500, TPOTMs: 40}
	for _, tt := range []struct {
		name       string
		req        sdk.Request
		pred       sdk.Prediction
		runningSLO float64
		want       Headroom
		ok         bool
	}{
		{"no prediction", sdk.Request{SLO: slo, Streaming: true}, sdk.Prediction{}, 0, Headroom{}, false},
		{"both objectives", sdk.Request{SLO: slo, Streaming: true}, sdk.Prediction{Valid: true, TTFTMs: 200, TPOTMs: 30}, 0, Headroom{300, 10}, true},
		{"a tighter running objective", sdk.Request{SLO: slo, Streaming: true}, sdk.Prediction{Valid: true, TTFTMs: 600, TPOTMs: 30}, 25, Headroom{-100, -5}, true},
		{"not streaming: no TPOT objective", sdk.Request{SLO: slo}, sdk.Prediction{Valid: true, TTFTMs: 200, TPOTMs: 30}, 0, Headroom{300, inf}, true},
		{"no SLO", sdk.Request{Streaming: true}, sdk.Prediction{Valid: true, TTFTMs: 200, TPOTMs: 30}, 0, Headroom{inf, inf}, true},
		// TPOT 0 is "unknown" (sdk.Prediction): it must not pass for 40 ms of headroom.
		{"TPOT unknown", sdk.Request{SLO: slo, Streaming: true}, sdk.Prediction{Valid: true, TTFTMs: 200}, 25, Headroom{300, inf}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := sdk.Endpoint{Prediction: tt.pred, State: sdk.EndpointState{MinRunningTPOTSLOMs: tt.runningSLO}}
			got, ok := HeadroomOf(&tt.req, &e, 1)
			if ok != tt.ok || got != tt.want {
				t.Errorf("HeadroomOf = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
