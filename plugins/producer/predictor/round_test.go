package predictor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// producers returns a producer serving from each of its sources: nothing yet, the cold-start
// profiles, the prior alone with TTFT only (first-token samples), the prior alone, residual
// trees, and trees learned without a prior.
func producers(t *testing.T) []struct {
	name string
	p    *Producer
	src  [2]source // TTFT, TPOT
} {
	t.Helper()
	none := New()
	cold := New()
	configure(t, cold, map[string]any{"coldStart": coldProfiles(t)})
	firstTokens, priorOnly := New(), New()
	for _, p := range []*Producer{firstTokens, priorOnly} {
		configure(t, p, map[string]any{"minNewSamples": 1000, "youngRows": 0})
	}
	rng := rand.New(rand.NewPCG(21, 22))
	first := samples(rng, 40, t0, nil)
	for i := range first {
		first[i].ActualTPOTMs, first[i].OutputTokens = 0, 0
	}
	observe(t, firstTokens, first)
	observe(t, priorOnly, samples(rng, 40, t0, nil))
	trees, _ := trainedProducer(t, nil)
	treesAlone, _ := trainedProducer(t, map[string]any{"prior": PriorOff})
	return []struct {
		name string
		p    *Producer
		src  [2]source
	}{{"no model", none, [2]source{fromNone, fromNone}},
		{"cold-start profiles", cold, [2]source{fromProfile, fromProfile}},
		{"prior, TTFT only", firstTokens, [2]source{fromPrior, fromNone}},
		{"prior", priorOnly, [2]source{fromPrior, fromPrior}},
		{"residual trees", trees, [2]source{fromTrees, fromTrees}},
		{"trees without prior", treesAlone, [2]source{fromTrees, fromTrees}}}
}

// roundCycle is a random cycle of n endpoints, the second of a round of three; endpoints
// alternate between the ID the samples were taken on ("e", which has a speed factor) and one
// the prior has not seen.
func roundCycle(rng *rand.Rand, n int) *sdk.Cycle {
	c := cycle(rng, n, t0.Add(time.Minute))
	for i := range c.Endpoints {
		c.Endpoints[i].ID = []string{"e", "f"}[i%2]
	}
	c.Round = sdk.Round{Position: 1, Size: 3}
	return c
}

// TestRoundAfterPredictionsArePlacedPredictions: in a round, every source's TTFTAfterMs and
// TPOTAfterMs for endpoint i are exactly what the same producer predicts for endpoint i of a copy
// decided alone with one more request placed on i (sdk.PlaceOn(copy, i, 1)); the predictions
// themselves are those of the cycle decided alone; outside a round the after-values are 0; where
// a target has no prediction (invalid, or TPOT unknown) its after-value is 0 too.
func TestRoundAfterPredictionsArePlacedPredictions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range producers(t) {
		t.Run(tc.name, func(t *testing.T) {
			if src := tc.p.serving.Load().sources(); src != tc.src {
				t.Fatalf("serving from %v, want %v", src, tc.src)
			}
			rng := rand.New(rand.NewPCG(23, 24))
			for range 20 {
				c := roundCycle(rng, 1+rng.IntN(12))
				got, err := tc.p.Produce(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				alone := *c
				alone.Round = sdk.Round{}
				want, err := tc.p.Produce(ctx, &alone)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if want[i].TTFTAfterMs != 0 || want[i].TPOTAfterMs != 0 {
						t.Fatalf("endpoint %d outside a round: %+v, want no after-values", i, want[i])
					}
					placed := alone
					placed.Endpoints = slices.Clone(c.Endpoints)
					sdk.PlaceOn(&placed, i, 1)
					after, err := tc.p.Produce(ctx, &placed)
					if err != nil {
						t.Fatal(err)
					}
					w := want[i]
					w.TTFTAfterMs, w.TPOTAfterMs = after[i].TTFTMs, after[i].TPOTMs
					if got[i] != w {
						t.Fatalf("endpoint %d in a round: %+v, want %+v (the cycle alone, then endpoint %d placed on)", i, got[i], w, i)
					}
					if !got[i].Valid && got[i].TTFTAfterMs != 0 || got[i].TPOTMs == 0 && got[i].TPOTAfterMs != 0 {
						t.Fatalf("endpoint %d: %+v, an after-value without its prediction", i, got[i])
					}
				}
			}
		})
	}
}

// TestRoundPriorTTFTGrowsWithLoad: the prior's TTFT is a non-negative combination of terms of
// which, with no request waiting, none falls as a request is placed (uncached × in-flight,
// in-flight and prefill in flight rise, the rest stay), so its TTFTAfterMs is never below its
// TTFTMs there. With requests waiting the model may say otherwise: a placed request lowers the
// remaining output per request in flight, which the queue term multiplies.
func TestRoundPriorTTFTGrowsWithLoad(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"minNewSamples": 1000, "youngRows": 0})
	rng := rand.New(rand.NewPCG(25, 26))
	observe(t, p, samples(rng, 40, t0, nil))
	risen := 0
	for range 20 {
		c := roundCycle(rng, 8)
		for i := range c.Endpoints {
			c.Endpoints[i].State.Waiting = 0
		}
		got, err := p.Produce(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		for i, pr := range got {
			if !pr.Valid || pr.TTFTAfterMs < pr.TTFTMs {
				t.Fatalf("endpoint %d, nothing waiting: %+v, want TTFTAfterMs >= TTFTMs", i, pr)
			}
			if pr.TTFTAfterMs > pr.TTFTMs {
				risen++
			}
		}
	}
	// The samples' law charges 0.004 ms per prefill token in flight, which a placement adds.
	if risen == 0 {
		t.Error("no placement raised the prior's TTFT, though the samples' latency grows with the prefill in flight")
	}
}

// BenchmarkProduceRound times Produce outside and inside a round, for 4 and 100 endpoints, with
// residual trees in service: the difference is what a round's after-predictions cost per cycle.
func BenchmarkProduceRound(b *testing.B) {
	p := New()
	configure(b, p, map[string]any{"trainInline": true})
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 40 {
		if _, err := p.Observe(context.Background(), samples(rng, 100, t0.Add(time.Duration(k)*time.Second), nil)); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{4, 100} {
		for _, round := range []sdk.Round{{}, {Position: 0, Size: 8}} {
			c := cycle(rng, n, t0.Add(time.Minute))
			c.Round = round
			name := map[bool]string{false: "alone", true: "round"}[c.InRound()]
			b.Run(fmt.Sprintf("%s/endpoints=%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Produce(context.Background(), c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
