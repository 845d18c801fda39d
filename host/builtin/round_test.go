package builtin

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// randomRoundCycle returns a cycle of 1 to 8 endpoints in a round, with small queues so that
// endpoints tie and one placement changes which is lowest or highest, and KV usage and prefix
// matches that sometimes lie outside [0, 1].
func randomRoundCycle(rng *rand.Rand) *sdk.Cycle {
	c := cycle(1+rng.IntN(8), rng.Uint64())
	c.Round = sdk.Round{Position: rng.IntN(4), Size: 4}
	c.Request = sdk.Request{InputTokens: int64(rng.IntN(4000))}
	for i := range c.Endpoints {
		c.Endpoints[i].State = sdk.EndpointState{
			Waiting: int64(rng.IntN(3)), DispatchedSinceScrape: int64(rng.IntN(3)), InflightRequests: int64(rng.IntN(4)),
			KVCacheUsage: rng.Float64()*1.4 - 0.2, PrefixMatch: rng.Float64()*1.4 - 0.2,
			PrefillTokensInFlight: int64(rng.IntN(10000)),
		}
	}
	return c
}

// heldQueueAfter is the queue score endpoint i of c must have after one more request like c's:
// 1 − (q′ − minQ) / max(maxQ − minQ, 1), q′ its queue with the request, minQ and maxQ over c's
// current queues (the scale held).
func heldQueueAfter(c *sdk.Cycle, i int, queue func(*sdk.EndpointState) int64) float64 {
	lo, hi := queue(&c.Endpoints[0].State), queue(&c.Endpoints[0].State)
	for _, e := range c.Endpoints {
		lo, hi = min(lo, queue(&e.State)), max(hi, queue(&e.State))
	}
	placed := *c
	placed.Endpoints = slices.Clone(c.Endpoints)
	sdk.PlaceOn(&placed, i, 1)
	return 1 - float64(queue(&placed.Endpoints[i].State)-lo)/float64(max(hi-lo, 1))
}

// TestScoreAfterHoldsTheScale: on 2,000 random cycles in a round, every built-in scorer's
// ScoreAfter moves each endpoint's queue term as one more request there moves it on the scale of
// the cycle's current queues (heldQueueAfter), and keeps its KV and prefix terms (a placement
// moves neither): the other endpoints' scores are untouched by a placement, so a round's picker
// can add placements up.
func TestScoreAfterHoldsTheScale(t *testing.T) {
	inflight := func(s *sdk.EndpointState) int64 { return s.InflightRequests }
	fresh := func(s *sdk.EndpointState) int64 { return s.Waiting + s.DispatchedSinceScrape }
	tests := []struct {
		name    string
		scorer  sdk.RoundScorer
		params  string
		queue   func(*sdk.EndpointState) int64
		w       [3]float64 // KV, queue, prefix weights of the composite; queue only: {0, 1, 0}
		onlyKVP bool       // the KV or prefix scorer: after-scores are the scores
	}{
		{"queue, waiting", NewQueueScorer(), `{"source":"waiting"}`, fresh, [3]float64{0, 1, 0}, false},
		{"queue, inflight", NewQueueScorer(), `{"source":"inflight"}`, inflight, [3]float64{0, 1, 0}, false},
		{"kv cache", NewKVCacheScorer(), ``, nil, [3]float64{}, true},
		{"prefix", NewPrefixScorer(), ``, nil, [3]float64{}, true},
		{"composite, defaults", NewCompositeScorer(), ``, fresh, [3]float64{1, 1, 1}, false},
		{"composite, inflight, uneven weights", NewCompositeScorer(), `{"kvCacheWeight":0.3,"queueWeight":2,"prefixWeight":0.7,"queueSource":"inflight"}`, inflight, [3]float64{0.3, 2, 0.7}, false},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.scorer.Configure([]byte(tc.params)); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, 8))
			for range 2000 {
				c := randomRoundCycle(rng)
				scores, err := tc.scorer.Score(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tc.scorer.ScoreAfter(ctx, c, scores)
				if err != nil {
					t.Fatal(err)
				}
				for i := range c.Endpoints {
					want := scores[i]
					if !tc.onlyKVP {
						st := &c.Endpoints[i].State
						kv, prefix := min(max(1-st.KVCacheUsage, 0), 1), min(max(st.PrefixMatch, 0), 1)
						want = (tc.w[0]*kv + tc.w[1]*heldQueueAfter(c, i, tc.queue) + tc.w[2]*prefix) / (tc.w[0] + tc.w[1] + tc.w[2])
					}
					if math.Abs(got[i]-want) > 1e-12 {
						t.Fatalf("states %+v: endpoint %d after-score %v, want %v", c.Endpoints, i, got[i], want)
					}
				}
			}
		})
	}
}

// TestScoreAfterChecksItsInput: a nil cycle or a score count other than the endpoints' is an
// error, as for Score.
func TestScoreAfterChecksItsInput(t *testing.T) {
	for _, s := range []sdk.RoundScorer{NewQueueScorer(), NewKVCacheScorer(), NewPrefixScorer(), NewCompositeScorer()} {
		if _, err := s.ScoreAfter(context.Background(), nil, nil); err == nil {
			t.Errorf("%s: a nil cycle was accepted", s.Type())
		}
		if _, err := s.ScoreAfter(context.Background(), cycle(2, 0), []float64{1}); err == nil {
			t.Errorf("%s: one score for two endpoints was accepted", s.Type())
		}
	}
}
