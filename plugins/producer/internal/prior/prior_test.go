package prior

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// engine is a known latency law: TTFT = 5 + 0.1·uncached + 0.02·uncached·in_flight and
// TPOT = 8 + 0.5·in_flight ms, times the endpoint's slowness.
func engine(r *sdk.Request, s *sdk.EndpointState, slow float64) (ttft, tpot float64) {
	uncached := (1 - s.PrefixMatch) * float64(r.InputTokens)
	n := float64(s.InflightRequests)
	return slow * (5 + 0.1*uncached + 0.02*uncached*n), slow * (8 + 0.5*n)
}

func sample(rng *rand.Rand, endpoint string, maxInflight int64) sdk.Sample {
	return sdk.Sample{EndpointID: endpoint,
		Request: sdk.Request{InputTokens: 100 + rng.Int64N(2000)},
		State:   sdk.EndpointState{InflightRequests: rng.Int64N(maxInflight + 1), PrefixMatch: 0.25 * float64(rng.IntN(4))}}
}

// slowness is how slow each of the two endpoints teachTwoSpeeds teaches.
var slowness = map[string]float64{"fast": 1, "slow": 2}

// teachTwoSpeeds adds 600 samples of the engine law, in turn from an endpoint "fast" and one
// "slow" (twice as slow), at loads up to maxInflight, refreshing every 50, and returns the last
// Snapshot.
func teachTwoSpeeds(p *Prior, rng *rand.Rand, maxInflight int64) *Snapshot {
	for i := range 600 {
		id := []string{"fast", "slow"}[i%2]
		s := sample(rng, id, maxInflight)
		ttft, tpot := engine(&s.Request, &s.State, slowness[id])
		p.Add(&s, ttft, tpot)
		if i%50 == 49 {
			p.Refresh()
		}
	}
	return p.Refresh()
}

// TestPriorLearnsTheLawAndExtrapolates fits a noiseless law on loads up to 4 in flight, on two
// endpoints one twice as slow as the other, and predicts loads up to 32 within 8 %, each
// endpoint at its own speed: what trees, which go flat beyond their data, cannot do. (Not
// exactly: one fleet model fits both endpoints' samples, whose mix differs a little by chance.)
func TestPriorLearnsTheLawAndExtrapolates(t *testing.T) {
	p := New(DefaultParams())
	rng := rand.New(rand.NewPCG(1, 2))
	snap := teachTwoSpeeds(p, rng, 4)
	for range 200 {
		id := []string{"fast", "slow"}[rng.IntN(2)]
		s := sample(rng, id, 32)
		wantTTFT, wantTPOT := engine(&s.Request, &s.State, slowness[id])
		ttft, tpot := snap.Predict(&s.Request, id, "", &s.State)
		if !snap.Ready() {
			t.Fatal("not ready after 600 samples")
		}
		if e := math.Abs(ttft-wantTTFT) / wantTTFT; e > 0.08 {
			t.Fatalf("%s, %d in flight, %d tokens: TTFT %.2f, want %.2f (%.1f %% off); %v", id, s.State.InflightRequests, s.Request.InputTokens, ttft, wantTTFT, 100*e, snap)
		}
		if e := math.Abs(tpot-wantTPOT) / wantTPOT; e > 0.08 {
			t.Fatalf("%s, %d in flight: TPOT %.2f, want %.2f; %v", id, s.State.InflightRequests, tpot, wantTPOT, snap)
		}
	}
	ft, st := snap.Speed("fast", "")[TTFT], snap.Speed("slow", "")[TTFT]
	if r := st / ft; r < 1.9 || r > 2.1 {
		t.Errorf("speed factors fast %.3f, slow %.3f: ratio %.3f, want 2", ft, st, r)
	}
}

// TestPriorReadiness: each target predicts (non-zero) from its MinSamples-th sample on, whatever
// the other has seen: first-token samples (TTFT only) make the prior serve before any answer
// finished, and it is the residual trees' base (Ready) only once both targets are.
func TestPriorReadiness(t *testing.T) {
	params := DefaultParams()
	p := New(params)
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(stage string, wantTTFT, wantTPOT bool) {
		t.Helper()
		s := sample(rng, "e", 4)
		snap := p.Refresh()
		ttft, tpot := snap.Predict(&s.Request, "e", "", &s.State)
		if ttft > 0 != wantTTFT || tpot > 0 != wantTPOT || snap.Learned(TTFT) != wantTTFT || snap.Learned(TPOT) != wantTPOT || snap.Ready() != (wantTTFT && wantTPOT) {
			t.Fatalf("%s: TTFT %.2f, TPOT %.2f, learned %v/%v, ready %v; want TTFT %v, TPOT %v", stage, ttft, tpot, snap.Learned(TTFT), snap.Learned(TPOT), snap.Ready(), wantTTFT, wantTPOT)
		}
	}
	for i := range params.MinSamples {
		check(fmt.Sprintf("after %d first-token samples", i), false, false)
		s := sample(rng, "e", 4)
		ttft, _ := engine(&s.Request, &s.State, 1)
		p.Add(&s, ttft, 0)
	}
	for i := range params.MinSamples {
		check(fmt.Sprintf("after %d finished samples", i), true, false)
		s := sample(rng, "e", 4)
		_, tpot := engine(&s.Request, &s.State, 1)
		p.Add(&s, 0, tpot)
	}
	check("after both", true, true)
	if (*Snapshot)(nil).Learned(TTFT) {
		t.Error("a nil snapshot (the prior off) serves")
	}
}

// TestPriorCoefficientsNonNegative: on a law where latency falls with a term (which no engine
// has), the fit keeps that coefficient at 0 rather than learning a negative one.
func TestPriorCoefficientsNonNegative(t *testing.T) {
	p := New(DefaultParams())
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		s := sample(rng, "e", 8)
		ttft := 200 - 10*float64(s.State.InflightRequests) + 0.05*float64(s.Request.InputTokens)
		p.Add(&s, ttft, 10)
	}
	for i, b := range p.Refresh().Coef[TTFT] {
		if b < 0 {
			t.Errorf("coefficient %s = %v < 0", TTFTTerms[i], b)
		}
	}
}

// TestPriorFollowsAChangedEngine: after the engine becomes 3× slower, the prior follows within a
// few half-lives.
func TestPriorFollowsAChangedEngine(t *testing.T) {
	params := DefaultParams()
	params.HalfLife, params.EndpointWindow = 100, 50
	p := New(params)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 2000 {
		slow := 1.0
		if i >= 1000 {
			slow = 3
		}
		s := sample(rng, []string{"a", "b"}[i%2], 8)
		ttft, tpot := engine(&s.Request, &s.State, slow)
		p.Add(&s, ttft, tpot)
		if i%25 == 24 {
			p.Refresh()
		}
	}
	snap := p.Refresh()
	s := sample(rng, "a", 8)
	want, _ := engine(&s.Request, &s.State, 3)
	got, _ := snap.Predict(&s.Request, "a", "", &s.State)
	if e := math.Abs(got-want) / want; e > 0.08 {
		t.Errorf("TTFT %.1f after the change, want %.1f (%.1f %% off)", got, want, 100*e)
	}
}

// TestNilSnapshotPredictsNothing: the prior off (a nil Prior's nil Snapshot) is never learned and
// predicts 0, 0, unknown, at speed 1.
func TestNilSnapshotPredictsNothing(t *testing.T) {
	var p *Prior
	s := p.Snapshot()
	r, st := sdk.Request{InputTokens: 100}, sdk.EndpointState{InflightRequests: 2}
	if ttft, tpot := s.Predict(&r, "e", "", &st); ttft != 0 || tpot != 0 || s.Learned(TTFT) || s.Ready() || s.Speed("e", "") != [2]float64{1, 1} {
		t.Errorf("nil snapshot: predict %v, %v, learned %v, ready %v, speed %v", ttft, tpot, s.Learned(TTFT), s.Ready(), s.Speed("e", ""))
	}
}

// TestStateRoundTrip: a prior restored from its state predicts what the original did, for every
// endpoint (the fleet model and each one's speed factor), also from a state written before the
// terms' supports were kept (every term then counts as supported by every sample), and a state
// sized for other terms is refused.
func TestStateRoundTrip(t *testing.T) {
	p := New(DefaultParams())
	rng := rand.New(rand.NewPCG(13, 14))
	want := teachTwoSpeeds(p, rng, 8)
	data, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var old map[string]json.RawMessage
	if err := json.Unmarshal(data, &old); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ttft_s1", "ttft_s2", "ttft_top", "tpot_s1", "tpot_s2", "tpot_top"} {
		if _, ok := old[k]; !ok {
			t.Fatalf("the state has no %s", k)
		}
		delete(old, k)
	}
	oldData, _ := json.Marshal(old)
	for _, state := range [][]byte{data, oldData} {
		q := New(DefaultParams())
		if err := q.Restore(state); err != nil {
			t.Fatal(err)
		}
		got := q.Snapshot()
		for range 50 {
			id := []string{"fast", "slow", "unseen"}[rng.IntN(3)]
			s := sample(rng, id, 16)
			wt, wp := want.Predict(&s.Request, id, "", &s.State)
			gt, gp := got.Predict(&s.Request, id, "", &s.State)
			if wt != gt || wp != gp {
				t.Fatalf("%s: restored predicts %v, %v; the original %v, %v", id, gt, gp, wt, wp)
			}
		}
	}
	q := New(DefaultParams())
	for _, bad := range []string{`{"ttft_a":[1],"ttft_b":[1]}`, strings.Replace(string(data), `"ttft_s1":[`, `"ttft_s1":[1,`, 1)} {
		if err := q.Restore([]byte(bad)); err == nil || !strings.Contains(err.Error(), "other terms") {
			t.Errorf("a state sized for other terms: %v", err)
		}
	}
}

// TestTermNeedsSupportToExtrapolate: a term fewer than MinSamples samples have excited counts
// no more in a prediction than the most they showed. On a batch engine stalled by another
// router's long prompt, the first sample with a queue (2 waiting, 2 s) arrived alone; fitted
// exactly by the queue terms and extrapolated, it predicted 20 s for the next endpoint with 35
// waiting, whose TTFT was 15 ms (bench routing --replicas 8, production, 2026-11-25). Held to
// what it saw, it predicts the 2 s that sample took. Once enough samples show what a queue
// costs, the term extrapolates (and the endpoint's speed factor, which took part of the queue's
// cost meanwhile, gives it back within its window).
func TestTermNeedsSupportToExtrapolate(t *testing.T) {
	params := DefaultParams()
	p := New(params)
	rng := rand.New(rand.NewPCG(15, 16))
	law := func(s *sdk.Sample) float64 {
		return 12 + 0.01*float64(s.Request.InputTokens) + 30*float64(s.State.Waiting)
	}
	queued := func(waiting int64) sdk.Sample {
		s := sample(rng, "e", 8)
		s.State.PrefixMatch, s.State.Waiting, s.State.DecodeTokensInFlight = 0, waiting, 100*s.State.InflightRequests
		return s
	}
	for i := range 300 {
		s := queued(0)
		p.Add(&s, law(&s), 0)
		if i%10 == 9 {
			p.Refresh()
		}
	}
	probe := queued(35)
	stall := queued(2)
	p.Add(&stall, 2000, 0)
	snap := p.Refresh()
	got, _ := snap.Predict(&probe.Request, "e", "", &probe.State)
	if got > 2000*1.05 {
		t.Fatalf("after one sample with a queue (2 waiting, 2 s): %.0f ms for 35 waiting; want at most what it took (%v)", got, snap)
	}
	for i := range 2 * params.EndpointWindow {
		s := queued(rng.Int64N(40))
		p.Add(&s, law(&s), 0)
		if i%10 == 9 {
			p.Refresh()
		}
	}
	snap = p.Refresh()
	got, _ = snap.Predict(&probe.Request, "e", "", &probe.State)
	if want := law(&probe); math.Abs(got/want-1) > 0.1 {
		t.Errorf("after %d samples with a queue: %.0f ms for 35 waiting, want %.0f (%v)", 2*params.EndpointWindow, got, want, snap)
	}
}

// TestKindsStartNewEndpointsAtTheirSpeed: with "fast" of kind h100 and "slow" (twice as slow) of
// kind a100, an endpoint never seen starts at its kind's speed: a new a100 about twice as slow
// as a new h100 (the kinds' log factors are shrunk by 8 pseudo-samples against 100 samples each
// of the window, so 2^(100/108) = 1.90), one of no known kind at the fleet's (1). The kinds
// survive a restore.
func TestKindsStartNewEndpointsAtTheirSpeed(t *testing.T) {
	p := New(DefaultParams())
	p.SetKind("fast", "h100")
	p.SetKind("slow", "a100")
	snap := teachTwoSpeeds(p, rand.New(rand.NewPCG(7, 8)), 4)
	check := func(snap *Snapshot) {
		t.Helper()
		for k, name := range []string{"TTFT", "TPOT"} {
			h, a := snap.Speed("new-h100", "h100")[k], snap.Speed("new-a100", "a100")[k]
			if r := a / h; math.Abs(r-1.90) > 0.05 {
				t.Errorf("%s: new h100 %.3f, new a100 %.3f, ratio %.3f, want 1.90", name, h, a, r)
			}
			if f := snap.Speed("new", "l4")[k]; f != 1 {
				t.Errorf("%s: an unknown kind's factor %.3f, want 1", name, f)
			}
		}
	}
	check(snap)
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q := New(DefaultParams())
	if err := q.Restore(data); err != nil {
		t.Fatal(err)
	}
	check(q.Snapshot())
}
