package scorer

import (
	"context"
	"slices"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// withAfter returns e whose TTFT one placement moves by d.
func withAfter(e sdk.Endpoint, d float64) sdk.Endpoint {
	e.Prediction.TTFTAfterMs = e.Prediction.TTFTMs + d
	return e
}

// TestRoundBurstSpreads: a max-score picker placing a round of 8 requests on 4 endpoints from
// the round's scores and after-scores, as a round-aware picker does (endpoint e, n placed on it
// already, scores score − n × (score − after), not clamped), spreads them as one-at-a-time
// decisions do (each scored again with the earlier ones placed, sdk.PlaceOn).
func TestRoundBurstSpreads(t *testing.T) {
	const k, d = 8, 50.0 // requests; a placement's TTFT move, ms
	equal := func(e sdk.Endpoint) []sdk.Endpoint {
		return []sdk.Endpoint{withAfter(e, d), withAfter(e, d), withAfter(e, d), withAfter(e, d)}
	}
	nonStreaming := func(ttftSLO float64) sdk.Request { return sdk.Request{SLO: sdk.SLO{TTFTMs: ttftSLO}} }
	tests := []struct {
		name      string
		params    string
		request   sdk.Request
		endpoints []sdk.Endpoint
		want      []int // requests per endpoint, one at a time and as placed
	}{
		{
			name: "no SLO, equal endpoints",
			// Every score is 1 and every after-score 0.01 (the scale is one placement, 50 ms):
			// one round over the four, then a second.
			endpoints: equal(ep("e", 100, 10)),
			want:      []int{2, 2, 2, 2},
		},
		{
			name: "no SLO, TTFT 100, 110, 120, 130, a placement 15 ms",
			// One at a time, the lowest TTFT + n × 15 wins: 100, 110, 115, 120, 125, 130, 130,
			// 135 go to a, b, a, c, b, a, d, c. Placed against the scale held (TTFT's span 30 ms)
			// the same. Re-scoring each placement (the normalisation recomputed, a's after-score
			// 0.75 where the held scale says 0.505) placed 5, 2, 1, 0.
			endpoints: []sdk.Endpoint{withAfter(ep("a", 100, 10), 15), withAfter(ep("b", 110, 10), 15),
				withAfter(ep("c", 120, 10), 15), withAfter(ep("d", 130, 10), 15)},
			want: []int{3, 2, 2, 1},
		},
		{
			name: "no SLO, TTFT 100, 100, 100, 200, a placement 50 ms",
			// a, b and c take turns at 100 and at 150; at 200 d ties with them, last in order.
			endpoints: []sdk.Endpoint{withAfter(ep("a", 100, 10), d), withAfter(ep("b", 100, 10), d),
				withAfter(ep("c", 100, 10), d), withAfter(ep("d", 200, 10), d)},
			want: []int{3, 3, 2, 0},
		},
		{
			name:   "most, TTFT headroom 300 ms: every placement meets",
			params: `{"headroomSelectionStrategy":"most"}`, request: nonStreaming(400),
			endpoints: equal(ep("e", 100, 10)),
			want:      []int{2, 2, 2, 2},
		},
		{
			name:   "most, TTFT headroom 75 ms: each endpoint's second placement misses",
			params: `{"headroomSelectionStrategy":"most"}`, request: nonStreaming(175),
			endpoints: equal(ep("e", 100, 10)),
			want:      []int{2, 2, 2, 2},
		},
		{
			name: "least, TTFT headroom 25 ms: the first placement misses",
			// Every after-score is outsideScore, −0.01: the group (meeting) loses each endpoint
			// placed on; one at a time, the missing endpoints are then ranked by deficit.
			request:   nonStreaming(125),
			endpoints: equal(ep("e", 100, 10)),
			want:      []int{2, 2, 2, 2},
		},
		{
			name: "none meets, all idle: a placement leaves the idle set",
			// Scores 1, after-scores −0.01; one at a time, the idle ones first, then by deficit.
			request:   nonStreaming(50),
			endpoints: equal(idle(ep("e", 100, 10))),
			want:      []int{2, 2, 2, 2},
		},
		{
			name: "no predictions: composite fallback, equal queues",
			// Scores (1 + 0)/2, after-scores (0 + 0)/2 (the scale is one request).
			endpoints: []sdk.Endpoint{load("a", 0, 1, 0), load("b", 0, 1, 0), load("c", 0, 1, 0), load("d", 0, 1, 0)},
			want:      []int{2, 2, 2, 2},
		},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := configured(t, tc.params)
			c := &sdk.Cycle{Round: sdk.Round{Size: k}, Request: tc.request, Endpoints: tc.endpoints}

			// One at a time: score, pick, place, again.
			oneByOne := make([]int, len(c.Endpoints))
			live := *c
			live.Endpoints = slices.Clone(c.Endpoints)
			for range k {
				scores, err := s.Score(ctx, &live)
				if err != nil {
					t.Fatal(err)
				}
				e := heuristics.FirstMax(scores)
				oneByOne[e]++
				sdk.PlaceOn(&live, e, 1)
			}

			// As a round: one Score and one ScoreAfter, placements extrapolated.
			scores, after := scoresOf(t, s, c)
			placed := make([]int, len(c.Endpoints))
			for range k {
				est := make([]float64, len(scores))
				for e := range est {
					est[e] = scores[e] - float64(placed[e])*(scores[e]-after[e])
				}
				placed[heuristics.FirstMax(est)]++
			}
			if !slices.Equal(oneByOne, tc.want) || !slices.Equal(placed, tc.want) {
				t.Errorf("one at a time %v, placed as a round %v (scores %v, after %v), want %v", oneByOne, placed, scores, after, tc.want)
			}
		})
	}
}
