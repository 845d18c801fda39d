package heuristics

import (
	"math"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// TestPriorPredictions works out each prior TTFT: 1000 · (waiting + dispatched since the scrape
// + 1) / first_token_rate ms, valid only where the endpoint has a rate.
func TestPriorPredictions(t *testing.T) {
	tests := []struct {
		name  string
		state sdk.EndpointState
		want  sdk.Prediction
	}{
		// 1000 · (0 + 1) / 10 = 100ms
		{"idle endpoint", sdk.EndpointState{FirstTokenRate: 10}, sdk.Prediction{Valid: true, TTFTMs: 100}},
		// 1000 · (3 + 1) / 20 = 200ms
		{"a queue", sdk.EndpointState{Waiting: 3, FirstTokenRate: 20}, sdk.Prediction{Valid: true, TTFTMs: 200}},
		// 1000 · (2 + 2 + 1) / 50 = 100ms: requests dispatched since the scrape queue too
		{"dispatched since the scrape", sdk.EndpointState{Waiting: 2, DispatchedSinceScrape: 2, FirstTokenRate: 50},
			sdk.Prediction{Valid: true, TTFTMs: 100}},
		{"no rate yet: no prior", sdk.EndpointState{Waiting: 3}, sdk.Prediction{}},
		{"a NaN rate: no prior", sdk.EndpointState{FirstTokenRate: math.NaN()}, sdk.Prediction{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &sdk.Cycle{Endpoints: []sdk.Endpoint{{ID: "e", State: tt.state}}}
			preds, any := PriorPredictions(c)
			if preds[0] != tt.want || any != tt.want.Valid {
				t.Errorf("prior %+v (any %v), want %+v", preds[0], any, tt.want)
			}
		})
	}
}
