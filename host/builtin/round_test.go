package builtin

import (
	"context"
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

// rescoredAfter is what sdk.RoundScorer.ScoreAfter must equal: per endpoint i, score i of s on a
// copy of c with only i placed on (sdk.PlaceOn(copy, i, 1)).
func rescoredAfter(t *testing.T, s sdk.Scorer, c *sdk.Cycle) []float64 {
	t.Helper()
	want := make([]float64, len(c.Endpoints))
	for i := range c.Endpoints {
		placed := *c
		placed.Endpoints = slices.Clone(c.Endpoints)
		sdk.PlaceOn(&placed, i, 1)
		scores, err := s.Score(context.Background(), &placed)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = scores[i]
	}
	return want
}

// TestScoreAfterIsRescoring: on 2,000 random cycles in a round, every built-in scorer's
// ScoreAfter equals, bit for bit, scoring a copy with only that endpoint placed on; the KV and
// prefix scorers return their scores as they are (a placement moves neither).
func TestScoreAfterIsRescoring(t *testing.T) {
	tests := []struct {
		name   string
		scorer sdk.RoundScorer
		params string
	}{
		{"queue, waiting", NewQueueScorer(), `{"source":"waiting"}`},
		{"queue, inflight", NewQueueScorer(), `{"source":"inflight"}`},
		{"kv cache", NewKVCacheScorer(), ``},
		{"prefix", NewPrefixScorer(), ``},
		{"composite, defaults", NewCompositeScorer(), ``},
		{"composite, inflight, uneven weights", NewCompositeScorer(), `{"kvCacheWeight":0.3,"queueWeight":2,"prefixWeight":0.7,"queueSource":"inflight"}`},
		{"composite, queue only", NewCompositeScorer(), `{"kvCacheWeight":0,"queueWeight":1,"prefixWeight":0}`},
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
				if want := rescoredAfter(t, tc.scorer, c); !slices.Equal(got, want) {
					t.Fatalf("states %+v: ScoreAfter %v, re-scoring with each endpoint placed %v", c.Endpoints, got, want)
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
