package predictor

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/producer/internal/prior"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// TestAfterPriorMovesOnlyThePrior: with after "prior", a residual producer's after-prediction of
// endpoint i is the prior on i with one more request placed (sdk.PlaceOn) times the trees' factor
// on i as it is, the factor its own prediction has: TPOTAfterMs / TPOTMs = prior after / prior now,
// and the same for TTFT (these samples' TPOT does not grow with the prefill in flight, so the bound
// on the prefill's rise does not bind: TestAfterPriorBoundsThePrefillsRise checks it). Its
// predictions are those of after "trees", which differs only in the after-values. Without the
// prior there is nothing but trees, and after "prior" is after "trees".
func TestAfterPriorMovesOnlyThePrior(t *testing.T) {
	ctx := context.Background()
	trees, _ := trainedProducer(t, nil)
	held, _ := trainedProducer(t, map[string]any{"after": AfterPrior})
	rng := rand.New(rand.NewPCG(31, 32))
	moved := 0
	for range 20 {
		c := roundCycle(rng, 1+rng.IntN(8))
		want, err := trees.Produce(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := held.Produce(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		snap := held.serving.Load().prior
		for i := range got {
			if got[i].TTFTMs != want[i].TTFTMs || got[i].TPOTMs != want[i].TPOTMs {
				t.Fatalf("endpoint %d: predictions %+v, want those of after trees %+v", i, got[i], want[i])
			}
			placed := sdk.Cycle{Request: c.Request, Endpoints: slices.Clone(c.Endpoints)}
			sdk.PlaceOn(&placed, i, 1)
			e, pe := &c.Endpoints[i], &placed.Endpoints[i]
			nowT, nowP := snap.Predict(&c.Request, e.ID, "", &e.State)
			afterT, afterP := snap.Predict(&c.Request, pe.ID, "", &pe.State)
			for _, k := range []struct {
				name                   string
				pred, after, pNow, pAf float64
			}{{"TTFT", got[i].TTFTMs, got[i].TTFTAfterMs, nowT, afterT}, {"TPOT", got[i].TPOTMs, got[i].TPOTAfterMs, nowP, afterP}} {
				if k.pred <= minPredictionMs || k.after <= minPredictionMs {
					continue // floored: the ratio says nothing
				}
				if r, w := k.after/k.pred, k.pAf/k.pNow; math.Abs(r-w) > 1e-9*w {
					t.Fatalf("endpoint %d %s: after / now = %.6f / %.6f = %.9f, want the prior's %.6f / %.6f = %.9f",
						i, k.name, k.after, k.pred, r, k.pAf, k.pNow, w)
				}
			}
			if got[i].TPOTAfterMs != want[i].TPOTAfterMs {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Fatal("after prior gave every TPOT after-value of after trees: the trees' factor never moved with a placement")
	}

	alone, _ := trainedProducer(t, map[string]any{"prior": PriorOff})
	aloneHeld, _ := trainedProducer(t, map[string]any{"prior": PriorOff, "after": AfterPrior})
	c := roundCycle(rng, 6)
	a, err := alone.Produce(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := aloneHeld.Produce(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatalf("without the prior, after prior gave %+v, want after trees' %+v", b, a)
	}
}

// TestAfterPriorHandWorked: with nothing waiting, the prior's TTFT of a request of u uncached
// prompt tokens on an endpoint with n requests, P prefill and D decode tokens in flight is
// speed × (a + b·u + c·P + d·u·n + e·n + h·D). One more request like it adds one to n and u to P,
// so the prior rises by c·u + d·u + e, and the after-prediction is the prediction (the prior
// times the trees' factor) times (prior + rise) / prior: the factor stays.
func TestAfterPriorHandWorked(t *testing.T) {
	p, _ := trainedProducer(t, map[string]any{"after": AfterPrior})
	snap := p.serving.Load().prior
	k := snap.Coef[prior.TTFT]
	const u, n, pf, d = 1000.0, 10.0, 2000.0, 500.0
	r := sdk.Request{ID: "r", InputTokens: u, MaxOutputTokens: 100, Streaming: true}
	st := sdk.EndpointState{InflightRequests: n, PrefillTokensInFlight: pf, DecodeTokensInFlight: d}
	c := &sdk.Cycle{Now: t0.Add(50e9), Request: r, Endpoints: []sdk.Endpoint{{ID: "e", State: st}}, Round: sdk.Round{Position: 1, Size: 2}}
	got, err := p.Produce(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	now := k[0] + k[1]*u + k[2]*pf + k[3]*u*n + k[4]*n + k[6]*d
	rise := k[2]*u + k[3]*u + k[4]
	if !(rise > 0) {
		t.Fatalf("the prior's TTFT coefficients %v do not grow with a placement: nothing to check", k)
	}
	speed := snap.Speed("e", "")[prior.TTFT]
	if pt, _ := snap.Predict(&r, "e", "", &st); math.Abs(pt-now*speed) > 1e-9*pt {
		t.Fatalf("the prior predicts %.6f, the hand-worked sum %.6f × speed %.4f = %.6f", pt, now, speed, now*speed)
	}
	want := got[0].TTFTMs * (now + rise) / now
	if math.Abs(got[0].TTFTAfterMs-want) > 1e-9*want {
		t.Fatalf("TTFTAfterMs %.6f, want %.6f × (%.4f + %.4f) / %.4f = %.6f", got[0].TTFTAfterMs, got[0].TTFTMs, now, rise, now, want)
	}
}

// burstProducer trains a producer with after "prior" on samples whose TPOT grows by 2 µs for every
// prefill token in flight at dispatch (a burst's mark more than one prompt's doing) and whose TTFT
// is truth's: 0.02 ms per uncached prompt token.
func burstProducer(t *testing.T) *Producer {
	t.Helper()
	p := New()
	configure(t, p, map[string]any{"trainInline": true, "after": AfterPrior})
	rng := rand.New(rand.NewPCG(41, 42))
	for b := range 40 {
		batch := samples(rng, 100, t0.Add(time.Duration(b)*time.Second), nil)
		for i := range batch {
			s := &batch[i]
			s.ActualTPOTMs = (7 + 0.002*float64(s.State.PrefillTokensInFlight)) * (1 + 0.02*rng.NormFloat64())
		}
		if _, err := p.Observe(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestAfterPriorBoundsThePrefillsRise: the prior learned about 2 µs of TPOT per prefill token in
// flight, so one more request of 1,000 uncached tokens raises its TPOT by about 2 ms. Its prefill
// takes W = the TTFT prior's coefficient on uncached tokens (about 0.02 ms) × 1,000 ≈ 20 ms of the
// engine. With 10 requests in flight and 500 decode tokens, a running request has 50 tokens left,
// and the prefill can raise its TPOT by at most W / 50 ≈ 0.4 ms: the after-TPOT is the prior
// without the prefill's rise plus that, times the trees' factor. With 1 request and 5 tokens left
// the bound, W / 5 ≈ 4 ms, is above the prior's 2 ms rise, which stands.
func TestAfterPriorBoundsThePrefillsRise(t *testing.T) {
	p := burstProducer(t)
	snap := p.serving.Load().prior
	k, kt := snap.Coef[prior.TPOT], snap.Coef[prior.TTFT]
	if !(k[2] > 0.0015 && kt[1] > 0.015) {
		t.Fatalf("the prior learned %v (TPOT) and %v (TTFT): want about 0.002 per prefill token in flight and 0.02 per uncached token", k, kt)
	}
	r := sdk.Request{ID: "r", InputTokens: 1000, MaxOutputTokens: 100, Streaming: true}
	for _, tc := range []struct {
		name      string
		n, decode int64
		bound     bool
	}{{"50 tokens left", 10, 500, true}, {"5 tokens left", 1, 5, false}} {
		st := sdk.EndpointState{InflightRequests: tc.n, PrefillTokensInFlight: 2000, DecodeTokensInFlight: tc.decode}
		c := &sdk.Cycle{Now: t0.Add(50 * time.Second), Request: r, Endpoints: []sdk.Endpoint{{ID: "e", State: st}}, Round: sdk.Round{Position: 1, Size: 2}}
		got, err := p.Produce(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		sp, spT := snap.Speed("e", "")[prior.TPOT], snap.Speed("e", "")[prior.TTFT]
		n := float64(tc.n)
		now := (k[0] + k[1]*n + k[2]*2000 + k[3]*1000 + k[4]*float64(tc.decode)) * sp
		placed := now + (k[1]+k[2]*1000)*sp
		w := kt[1] * 1000 * spT
		bounded := now + k[1]*sp + w/(float64(tc.decode)/n)
		after := placed
		if tc.bound {
			if !(bounded < placed) {
				t.Fatalf("%s: the bound %.4f is not below the prior's %.4f: nothing to check", tc.name, bounded, placed)
			}
			after = bounded
		} else if !(bounded > placed) {
			t.Fatalf("%s: the bound %.4f is not above the prior's %.4f: nothing to check", tc.name, bounded, placed)
		}
		want := got[0].TPOTMs * after / now
		if math.Abs(got[0].TPOTAfterMs-want) > 1e-9*want {
			t.Fatalf("%s: TPOTAfterMs %.6f, want %.6f × %.4f / %.4f = %.6f (W = %.2f ms)", tc.name, got[0].TPOTAfterMs, got[0].TPOTMs, after, now, want, w)
		}
		t.Logf("%s: TPOT %.3f → %.3f ms (the prior alone: → %.3f)", tc.name, got[0].TPOTMs, got[0].TPOTAfterMs, got[0].TPOTMs*placed/now)
	}
}
