package scorer

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// pick returns one of vs at random.
func pick[T any](rng *rand.Rand, vs ...T) T { return vs[rng.IntN(len(vs))] }

// randomRoundCycle returns a cycle of 1 to 8 endpoints in a round whose numbers come from small
// sets, so that endpoints tie, sit on the SLO's boundary, and one placement moves an endpoint
// across it, out of the idle set, or past another: every step of score is reached, before and
// after a placement. Some predictions are invalid or infinite, some TPOTs unknown (0), some
// after-values missing (0) or below the prediction.
func randomRoundCycle(rng *rand.Rand) *sdk.Cycle {
	c := &sdk.Cycle{Round: sdk.Round{Position: 1, Size: 4}, Endpoints: make([]sdk.Endpoint, 1+rng.IntN(8))}
	c.Request = sdk.Request{Streaming: rng.IntN(3) > 0, InputTokens: int64(rng.IntN(3000)),
		SLO: sdk.SLO{TTFTMs: pick(rng, 0.0, 0, 200, 300), TPOTMs: pick(rng, 0.0, 0, 20, 30)}}
	noPrediction := rng.IntN(6) == 0
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		e.State = sdk.EndpointState{InflightRequests: pick[int64](rng, 0, 0, 1, 2), Waiting: pick[int64](rng, 0, 1, 3),
			DispatchedSinceScrape: pick[int64](rng, 0, 1), KVCacheUsage: pick(rng, 0, 0.3, 0.9, 1.2),
			PrefixMatch: pick(rng, 0, 0.5, 1), MinRunningTPOTSLOMs: pick(rng, 0.0, 0, 15, 25)}
		if noPrediction || rng.IntN(8) == 0 {
			continue
		}
		pr := sdk.Prediction{Valid: true, TTFTMs: pick(rng, 100.0, 150, 200, 250, 300, 350),
			TPOTMs: pick(rng, 0.0, 10, 15, 20, 25, 30)}
		if rng.IntN(4) > 0 {
			pr.TTFTAfterMs = pr.TTFTMs + pick(rng, 0.0, 25, 50, 100, 200, -40)
		}
		if rng.IntN(4) > 0 && pr.TPOTMs > 0 {
			pr.TPOTAfterMs = pr.TPOTMs + pick(rng, 0.0, 2.5, 5, 10, -5)
		}
		if rng.IntN(20) == 0 {
			pr.TTFTMs = math.Inf(1)
		}
		e.Prediction = pr
	}
	return c
}

// TestScoreAfterIsRescoring: on 20,000 random cycles in a round, under each parameter set,
// ScoreAfter equals bit for bit what Score gives endpoint i on a copy of the cycle with only i
// placed on (sdk.PlaceOn(copy, i, 1)), the others as they are.
func TestScoreAfterIsRescoring(t *testing.T) {
	tests := []struct {
		name   string
		params string
	}{
		{"defaults (least, 0.8/0.2, in-flight fallback)", ``},
		{"most", `{"headroomSelectionStrategy":"most"}`},
		{"TTFT alone, buffer 0.8", `{"tpotWeight":0,"sloBufferFactor":0.8}`},
		{"TPOT heavy, waiting fallback with KV", `{"ttftWeight":0.1,"tpotWeight":3,"kvCacheWeight":1,"queueSource":"waiting"}`},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			if err := s.Configure([]byte(tc.params)); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(31, 32))
			for range 20000 {
				c := randomRoundCycle(rng)
				scores, err := s.Score(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.ScoreAfter(ctx, c, scores)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]float64, len(c.Endpoints))
				for i := range c.Endpoints {
					placed := *c
					placed.Endpoints = slices.Clone(c.Endpoints)
					sdk.PlaceOn(&placed, i, 1)
					again, err := s.Score(ctx, &placed)
					if err != nil {
						t.Fatal(err)
					}
					want[i] = again[i]
				}
				if !slices.Equal(got, want) {
					t.Fatalf("request %+v, endpoints %+v:\nScoreAfter %v\nre-scored  %v", c.Request, c.Endpoints, got, want)
				}
			}
		})
	}
}

// TestScoreAfterChecksItsInput: a nil cycle or a score count other than the endpoints' is an
// error.
func TestScoreAfterChecksItsInput(t *testing.T) {
	s := New()
	if _, err := s.ScoreAfter(context.Background(), nil, nil); err == nil {
		t.Error("a nil cycle was accepted")
	}
	c := &sdk.Cycle{Endpoints: []sdk.Endpoint{ep("a", 100, 10), ep("b", 200, 10)}}
	if _, err := s.ScoreAfter(context.Background(), c, []float64{1}); err == nil {
		t.Error("one score for two endpoints was accepted")
	}
}

// BenchmarkScoreAfter times ScoreAfter against the re-scoring it replaces (one Score per
// endpoint on a copy with that endpoint placed on), on a cycle of 100 endpoints with an SLO.
func BenchmarkScoreAfter(b *testing.B) {
	rng := rand.New(rand.NewPCG(33, 34))
	c := &sdk.Cycle{Round: sdk.Round{Size: 8}, Request: sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 300, TPOTMs: 30}},
		Endpoints: make([]sdk.Endpoint, 100)}
	for i := range c.Endpoints {
		ttft, tpot := 100+300*rng.Float64(), 10+25*rng.Float64()
		c.Endpoints[i] = ep("e", ttft, tpot)
		c.Endpoints[i].Prediction.TTFTAfterMs, c.Endpoints[i].Prediction.TPOTAfterMs = ttft+40, tpot+2
	}
	s := New()
	ctx := context.Background()
	scores, _ := s.Score(ctx, c)
	b.Run("ScoreAfter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.ScoreAfter(ctx, c, scores); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rescoring", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range c.Endpoints {
				placed := *c
				placed.Endpoints = slices.Clone(c.Endpoints)
				sdk.PlaceOn(&placed, i, 1)
				if _, err := s.Score(ctx, &placed); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
