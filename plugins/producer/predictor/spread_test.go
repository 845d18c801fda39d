package predictor

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// off returns the samples, taken on endpoint, each carrying a prediction that is off its actual
// latencies by exactly ±ttftLog and ±tpotLog in log space, the sign alternating.
func off(rng *rand.Rand, n int, endpoint string, ttftLog, tpotLog float64) []sdk.Sample {
	s := samples(rng, n, t0, nil)
	for i := range s {
		sign := float64(1 - 2*(i%2))
		s[i].EndpointID = endpoint
		s[i].Predicted = sdk.Prediction{Valid: true, TTFTMs: s[i].ActualTTFTMs * math.Exp(sign*ttftLog),
			TPOTMs: s[i].ActualTPOTMs * math.Exp(-sign*tpotLog)}
	}
	return s
}

// The spreads are the root mean square of ln(actual / predicted) per endpoint, over about its
// last 100 samples, pulled toward the fleet's by 8 pseudo-samples; worked by hand:
//
//   - endpoint e: 200 samples off by ±0.2 (TTFT) and ±0.3 (TPOT): its mean squares are 0.04 and
//     0.09 (the running mean over 100 of a constant is that constant);
//   - then endpoint g: 4 samples off by ±0.1 and ±0.1, mean squares 0.01;
//   - the fleet's mean square moved from 0.09 toward 0.01 four times by 1/100:
//     0.01 + 0.08 × 0.99⁴ = 0.0868477 (TPOT), 0.01 + 0.03 × 0.99⁴ = 0.0388179 (TTFT);
//   - g's TPOT spread: √((4 × 0.01 + 8 × 0.0868477) / 12) = 0.247451; e's: √((100 × 0.09 + 8 ×
//     0.0868477) / 108) = 0.299611; an endpoint never seen reads as the fleet, √0.0868477 = 0.294700.
//     TTFT: g √((0.04 + 8 × 0.0388179) / 12) = 0.170915, e √((4 + 8 × 0.0388179) / 108) = 0.199781,
//     unseen √0.0388179 = 0.197023.
func TestSpreadsPerEndpoint(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"minNewSamples": 100000, "youngRows": 0})
	rng := rand.New(rand.NewPCG(31, 32))
	observe(t, p, off(rng, 200, "e", 0.2, 0.3))
	observe(t, p, off(rng, 4, "g", 0.1, 0.1))
	c := cycle(rng, 3, t0)
	for i, id := range []string{"e", "g", "new"} {
		c.Endpoints[i].ID = id
	}
	got, err := p.Produce(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]float64{{0.199781, 0.299611}, {0.170915, 0.247451}, {0.197023, 0.294700}}
	for i, w := range want {
		if math.Abs(got[i].TTFTSpread-w[0]) > 1e-5 || math.Abs(got[i].TPOTSpread-w[1]) > 1e-5 {
			t.Errorf("%s: spreads %.6f, %.6f; want %.6f, %.6f", c.Endpoints[i].ID, got[i].TTFTSpread, got[i].TPOTSpread, w[0], w[1])
		}
	}
}

// Fewer than 16 scored samples publish no spread (0, unknown); an exact producer publishes 1 %.
func TestSpreadsNeedSamples(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"minNewSamples": 100000, "youngRows": 0})
	rng := rand.New(rand.NewPCG(33, 34))
	observe(t, p, off(rng, 15, "e", 0, 0))
	tab := p.serving.Load().spreads
	if v := tab.of("e"); v != [2]float64{} {
		t.Fatalf("15 samples: spreads %v, want none", v)
	}
	observe(t, p, off(rng, 1, "e", 0, 0))
	if v := p.serving.Load().spreads.of("e"); v != [2]float64{minSpread, minSpread} {
		t.Fatalf("16 exact samples: spreads %v, want %v each", v, minSpread)
	}
}

// A cycle whose request has an objective, or one of whose endpoints runs a request with a TPOT
// objective, gets the after-predictions outside a round too, the very values a round gets; a
// cycle with neither does not.
func TestAfterPredictionsWhereAPlacementWeighs(t *testing.T) {
	p, rng := trainedProducer(t, nil)
	ctx := context.Background()
	for range 10 {
		round := roundCycle(rng, 4)
		inRound, err := p.Produce(ctx, round)
		if err != nil {
			t.Fatal(err)
		}
		alone := *round
		alone.Round = sdk.Round{}
		plain, err := p.Produce(ctx, &alone)
		if err != nil {
			t.Fatal(err)
		}
		for i := range plain {
			if plain[i].TTFTAfterMs != 0 || plain[i].TPOTAfterMs != 0 {
				t.Fatalf("no objective anywhere: endpoint %d %+v, want no after-values", i, plain[i])
			}
		}
		withSLO := alone
		withSLO.Request.SLO = sdk.SLO{TTFTMs: 1000, TPOTMs: 25}
		running := alone
		running.Endpoints = append([]sdk.Endpoint(nil), alone.Endpoints...)
		running.Endpoints[2].State.MinRunningTPOTSLOMs = 25
		for name, c := range map[string]*sdk.Cycle{"request objective": &withSLO, "running objective": &running} {
			got, err := p.Produce(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i].TTFTAfterMs != inRound[i].TTFTAfterMs || got[i].TPOTAfterMs != inRound[i].TPOTAfterMs || got[i].TTFTAfterMs == 0 {
					t.Fatalf("%s: endpoint %d %+v, want the round's after-values %+v", name, i, got[i], inRound[i])
				}
			}
		}
	}
}
