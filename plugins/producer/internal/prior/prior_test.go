package prior

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
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

// TestPriorLearnsTheLawAndExtrapolates fits a noiseless law on loads up to 4 in flight, on two
// endpoints one twice as slow as the other, and predicts loads up to 32 within 8 %, each
// endpoint at its own speed: what trees, which go flat beyond their data, cannot do.
func TestPriorLearnsTheLawAndExtrapolates(t *testing.T) {
	p := New(DefaultParams())
	rng := rand.New(rand.NewPCG(1, 2))
	slow := map[string]float64{"fast": 1, "slow": 2}
	for i := range 600 {
		id := []string{"fast", "slow"}[i%2]
		s := sample(rng, id, 4)
		ttft, tpot := engine(&s.Request, &s.State, slow[id])
		p.Add(&s, ttft, tpot)
		if i%50 == 49 {
			p.Refresh()
		}
	}
	snap := p.Refresh()
	for range 200 {
		id := []string{"fast", "slow"}[rng.IntN(2)]
		s := sample(rng, id, 32)
		wantTTFT, wantTPOT := engine(&s.Request, &s.State, slow[id])
		ttft, tpot := snap.Predict(&s.Request, id, &s.State)
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
	ft, st := snap.Speed("fast")[TTFT], snap.Speed("slow")[TTFT]
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
		ttft, tpot := snap.Predict(&s.Request, "e", &s.State)
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
	got, _ := snap.Predict(&s.Request, "a", &s.State)
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
	if ttft, tpot := s.Predict(&r, "e", &st); ttft != 0 || tpot != 0 || s.Learned(TTFT) || s.Ready() || s.Speed("e") != [2]float64{1, 1} {
		t.Errorf("nil snapshot: predict %v, %v, learned %v, ready %v, speed %v", ttft, tpot, s.Learned(TTFT), s.Ready(), s.Speed("e"))
	}
}

// TestEndpointsWithTheirOwnPhysics: two endpoints whose latencies are not multiples of one
// another (one's prefill slows with its load, the other's does not, as a server with less memory
// bandwidth's would) are each predicted within 5 % from their own fits, at loads up to 4×
// those sampled; one fleet model times a speed factor per endpoint (endpointRows 0) cannot fit
// both and is more than 15 % off on one of them.
func TestEndpointsWithTheirOwnPhysics(t *testing.T) {
	law := func(id string, r *sdk.Request, s *sdk.EndpointState) (ttft, tpot float64) {
		uncached := (1 - s.PrefixMatch) * float64(r.InputTokens)
		n := float64(s.InflightRequests)
		if id == "flat" {
			return 5 + 0.1*uncached, 8 + 0.5*n
		}
		return 5 + 0.1*uncached + 0.05*uncached*n, 8 + 2*n
	}
	worst := func(rows float64) float64 {
		params := DefaultParams()
		params.EndpointRows = rows
		p := New(params)
		rng := rand.New(rand.NewPCG(9, 10))
		for i := range 2000 {
			id := []string{"flat", "steep"}[i%2]
			s := sample(rng, id, 8)
			ttft, tpot := law(id, &s.Request, &s.State)
			p.Add(&s, ttft, tpot)
			if i%100 == 99 {
				p.Refresh()
			}
		}
		snap, e := p.Refresh(), 0.0
		for range 400 {
			id := []string{"flat", "steep"}[rng.IntN(2)]
			s := sample(rng, id, 32)
			wantTTFT, wantTPOT := law(id, &s.Request, &s.State)
			ttft, tpot := snap.Predict(&s.Request, id, &s.State)
			e = max(e, math.Abs(ttft-wantTTFT)/wantTTFT, math.Abs(tpot-wantTPOT)/wantTPOT)
		}
		return e
	}
	if e := worst(DefaultParams().EndpointRows); e > 0.05 {
		t.Errorf("own fits: worst error %.1f %%, want ≤ 5 %%", 100*e)
	}
	if e := worst(0); e < 0.15 {
		t.Errorf("fleet model times speed factors: worst error %.1f %%; the law is too easy to tell the two apart", 100*e)
	}
}

// TestANewEndpointStartsFromTheFleet: an endpoint with a few samples predicts about the fleet
// model times its speed factor, not an extrapolation of its own few rows.
func TestANewEndpointStartsFromTheFleet(t *testing.T) {
	p := New(DefaultParams())
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 1000 {
		s := sample(rng, []string{"a", "b"}[i%2], 8)
		ttft, tpot := engine(&s.Request, &s.State, 1)
		p.Add(&s, ttft, tpot)
		if i%100 == 99 {
			p.Refresh()
		}
	}
	for range 3 { // three samples at one load and one size: alone, they determine nothing
		s := sample(rng, "new", 0)
		s.Request.InputTokens, s.State.PrefixMatch = 1000, 0
		ttft, tpot := engine(&s.Request, &s.State, 1)
		p.Add(&s, ttft, tpot)
	}
	snap := p.Refresh()
	for range 100 {
		s := sample(rng, "new", 16)
		wantTTFT, wantTPOT := engine(&s.Request, &s.State, 1)
		ttft, tpot := snap.Predict(&s.Request, "new", &s.State)
		if e := max(math.Abs(ttft-wantTTFT)/wantTTFT, math.Abs(tpot-wantTPOT)/wantTPOT); e > 0.08 {
			t.Fatalf("new endpoint, %d in flight, %d tokens: TTFT %.1f (want %.1f), TPOT %.1f (want %.1f)", s.State.InflightRequests, s.Request.InputTokens, ttft, wantTTFT, tpot, wantTPOT)
		}
	}
}

// TestStateRoundTrip: a prior restored from its state predicts what the original did, for every
// endpoint, and goes on learning from where it was; a state without the endpoints' own fits (as
// producer 3.1.0 wrote) restores too, each endpoint starting from the fleet model.
func TestStateRoundTrip(t *testing.T) {
	p := New(DefaultParams())
	rng := rand.New(rand.NewPCG(13, 14))
	slow := map[string]float64{"fast": 1, "slow": 2}
	for i := range 600 {
		id := []string{"fast", "slow"}[i%2]
		s := sample(rng, id, 8)
		ttft, tpot := engine(&s.Request, &s.State, slow[id])
		p.Add(&s, ttft, tpot)
		if i%50 == 49 {
			p.Refresh()
		}
	}
	want := p.Refresh()
	data, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	q := New(DefaultParams())
	if err := q.Restore(data); err != nil {
		t.Fatal(err)
	}
	got := q.Snapshot()
	for range 50 {
		id := []string{"fast", "slow", "unseen"}[rng.IntN(3)]
		s := sample(rng, id, 16)
		wt, wp := want.Predict(&s.Request, id, &s.State)
		gt, gp := got.Predict(&s.Request, id, &s.State)
		if wt != gt || wp != gp {
			t.Fatalf("%s: restored predicts %v, %v; the original %v, %v", id, gt, gp, wt, wp)
		}
	}
	var old map[string]any
	if err := json.Unmarshal(data, &old); err != nil {
		t.Fatal(err)
	}
	delete(old, "fits")
	delete(old, "rows")
	data, _ = json.Marshal(old)
	if err := q.Restore(data); err != nil {
		t.Fatalf("a state without the endpoints' fits: %v", err)
	}
	for range 50 {
		id := []string{"fast", "slow"}[rng.IntN(2)]
		s := sample(rng, id, 16)
		wantTTFT, _ := engine(&s.Request, &s.State, slow[id])
		ttft, _ := q.Snapshot().Predict(&s.Request, id, &s.State)
		if e := math.Abs(ttft-wantTTFT) / wantTTFT; e > 0.08 {
			t.Fatalf("%s from an old state: TTFT %.1f, want %.1f", id, ttft, wantTTFT)
		}
	}
	if err := q.Restore([]byte(`{"ttft_a":[1],"ttft_b":[1]}`)); err == nil || !strings.Contains(err.Error(), "other terms") {
		t.Errorf("a state sized for other terms: %v", err)
	}
}

// BenchmarkAddRefresh100Endpoints: one feedback batch of 256 samples over 100 endpoints, then
// the Refresh that publishes it, with every endpoint's own fits solved and without them.
func BenchmarkAddRefresh100Endpoints(b *testing.B) {
	for _, rows := range []float64{DefaultParams().EndpointRows, 0} {
		b.Run(fmt.Sprintf("endpointRows=%v", rows), func(b *testing.B) {
			params := DefaultParams()
			params.EndpointRows = rows
			p := New(params)
			rng := rand.New(rand.NewPCG(15, 16))
			batch := make([]sdk.Sample, 256)
			for i := range batch {
				batch[i] = sample(rng, strconv.Itoa(i%100), 16)
			}
			b.ReportAllocs()
			for b.Loop() {
				for i := range batch {
					s := &batch[i]
					ttft, tpot := engine(&s.Request, &s.State, 1)
					p.Add(s, ttft, tpot)
				}
				p.Refresh()
			}
		})
	}
}
