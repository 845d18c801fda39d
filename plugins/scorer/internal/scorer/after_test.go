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

// paramSets are the parameter sets the property tests run under.
var paramSets = []struct {
	name   string
	params string
}{
	{"defaults (least, 0.8/0.2, in-flight fallback)", ``},
	{"most", `{"headroomSelectionStrategy":"most"}`},
	{"TTFT alone, buffer 0.8", `{"tpotWeight":0,"sloBufferFactor":0.8}`},
	{"TPOT heavy, most, waiting fallback with KV", `{"ttftWeight":0.1,"tpotWeight":3,"headroomSelectionStrategy":"most","kvCacheWeight":1,"queueSource":"waiting"}`},
}

// configured returns a scorer configured with params.
func configured(t testing.TB, params string) *Scorer {
	t.Helper()
	s := New()
	if err := s.Configure([]byte(params)); err != nil {
		t.Fatal(err)
	}
	return s
}

// scoresOf returns s's scores and after-scores for c.
func scoresOf(t testing.TB, s *Scorer, c *sdk.Cycle) (scores, after []float64) {
	t.Helper()
	scores, err := s.Score(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if after, err = s.ScoreAfter(context.Background(), c, scores); err != nil {
		t.Fatal(err)
	}
	return scores, after
}

// placedCopy returns a copy of c with endpoint i placed on once (sdk.PlaceOn).
func placedCopy(c *sdk.Cycle, i int) *sdk.Cycle {
	placed := *c
	placed.Endpoints = slices.Clone(c.Endpoints)
	sdk.PlaceOn(&placed, i, 1)
	return &placed
}

// TestScoreAfterHoldsTheFrame: on 20,000 random cycles in a round, under each parameter set,
// ScoreAfter's value for endpoint i is i's placed values (sdk.PlaceOn(copy, i, 1)) scored against
// the cycle's current frame. The reference takes the frame (group, bounds, placement scale) from
// the cycle as it is and ranks i's placed outlook in it with frame.rank, the function Score ranks
// with; an endpoint the group no longer holds ranks below (or, moved to a better tier, above)
// every one it holds. Where i's placed values stay within the bounds, the reference is checked
// without the scorer's internals too: Score on the cycle with i's placed copy added as one more
// endpoint leaves every current score as it is and gives the copy ScoreAfter's value. So does the
// composite fallback wherever adding the copy leaves the current scores as they are.
func TestScoreAfterHoldsTheFrame(t *testing.T) {
	for _, tc := range paramSets {
		t.Run(tc.name, func(t *testing.T) {
			s := configured(t, tc.params)
			p := s.Get()
			rng := rand.New(rand.NewPCG(31, 32))
			checked := 0 // endpoints checked against Score beside the cycle
			for range 20000 {
				c := randomRoundCycle(rng)
				scores, got := scoresOf(t, s, c)
				f, outlooks := frameOf(c, p)
				fail := func(format string, args ...any) {
					t.Helper()
					t.Fatalf("request %+v, endpoints %+v, scores %v, after %v: "+format, append([]any{c.Request, c.Endpoints, scores, got}, args...)...)
				}
				beside := func(i int) []float64 { // Score with i's placed copy added
					b := *c
					b.Endpoints = append(slices.Clone(c.Endpoints), placedCopy(c, i).Endpoints[i])
					again, err := s.Score(context.Background(), &b)
					if err != nil {
						t.Fatal(err)
					}
					return again
				}
				if f == nil {
					for i := range c.Endpoints {
						if again := beside(i); slices.Equal(again[:len(c.Endpoints)], scores) {
							checked++
							if again[len(c.Endpoints)] != got[i] {
								fail("endpoint %d's copy scores %v beside the cycle", i, again[len(c.Endpoints)])
							}
						}
					}
					continue
				}
				moved := make([]outlook, len(c.Endpoints))
				for i := range moved {
					moved[i] = outlookOf(&c.Request, &placedCopy(c, i).Endpoints[i], p)
				}
				f.setUnits(outlooks, moved, p)
				lowest, highest := 0.0, 1.0 // over the endpoints the group holds after a placement
				for i := range moved {
					if !f.holds(&moved[i]) {
						continue
					}
					if want := f.rank(&moved[i], p); got[i] != want {
						fail("endpoint %d: %v against the frame", i, want)
					}
					lowest, highest = min(lowest, got[i]), max(highest, got[i])
					if !f.holds(&outlooks[i]) || !within(f, f.values(&moved[i], p)) {
						continue
					}
					checked++
					again := beside(i)
					if !slices.Equal(again[:len(c.Endpoints)], scores) || again[len(c.Endpoints)] != got[i] {
						fail("endpoint %d: beside the cycle Score gives %v", i, again)
					}
				}
				for i := range moved {
					switch {
					case f.holds(&moved[i]):
					case f.above(&moved[i]) && got[i] <= highest:
						fail("endpoint %d moved above the group, not above %v", i, highest)
					case !f.above(&moved[i]) && (got[i] >= lowest || got[i] >= 0):
						fail("endpoint %d left the group, not below %v and 0", i, lowest)
					}
				}
			}
			// The check against Score reaches enough endpoints to mean something.
			if checked < 10000 {
				t.Errorf("checked %d endpoints against Score, want ≥ 10,000", checked)
			}
		})
	}
}

// within reports whether values v lie within the frame's bounds in every dimension where they
// are finite.
func within(f *frame, v [2]float64) bool {
	for k, d := range f.dims {
		if !math.IsInf(v[k], 0) && (!d.finite || v[k] < d.lo || v[k] > d.hi) {
			return false
		}
	}
	return true
}

// TestScoreAfterNeverRaises: on 20,000 random cycles in a round whose after-predictions are
// never below the predictions, a placement never raises an endpoint's score, but under least
// (bin-packing) for an endpoint that meets the SLO before and after it: least prefers the
// endpoint closest to the boundary, and a placement moves it closer. An endpoint the placement
// leaves outside the group (after-score < 0 with predictions) ranks below every current score
// and every other after-score of an endpoint in the group.
func TestScoreAfterNeverRaises(t *testing.T) {
	for _, tc := range paramSets {
		t.Run(tc.name, func(t *testing.T) {
			s := configured(t, tc.params)
			p := s.Get()
			rng := rand.New(rand.NewPCG(41, 42))
			for range 20000 {
				c := randomRoundCycle(rng)
				for i := range c.Endpoints {
					pr := &c.Endpoints[i].Prediction
					if pr.TTFTAfterMs > 0 {
						pr.TTFTAfterMs = max(pr.TTFTAfterMs, pr.TTFTMs)
					}
					if pr.TPOTAfterMs > 0 {
						pr.TPOTAfterMs = max(pr.TPOTAfterMs, pr.TPOTMs)
					}
				}
				scores, after := scoresOf(t, s, c)
				f, outlooks := frameOf(c, p)
				for i := range c.Endpoints {
					if after[i] <= scores[i] {
						continue
					}
					moved := outlookOf(&c.Request, &placedCopy(c, i).Endpoints[i], p)
					binPacking := p.HeadroomSelectionStrategy == StrategyLeast && f != nil && f.tier == tierMeets &&
						f.holds(&outlooks[i]) && f.holds(&moved)
					if !binPacking {
						t.Fatalf("request %+v, endpoints %+v: endpoint %d scores %v, %v after a placement", c.Request, c.Endpoints, i, scores[i], after[i])
					}
				}
				if f == nil {
					continue
				}
				floor := math.Inf(1) // the lowest score or after-score of an endpoint in the group
				for i := range c.Endpoints {
					if scores[i] > 0 {
						floor = min(floor, scores[i])
					}
					if after[i] >= 0 {
						floor = min(floor, after[i])
					}
				}
				for i := range c.Endpoints {
					if after[i] < 0 && after[i] >= floor {
						t.Fatalf("request %+v, endpoints %+v: endpoint %d placed outside the group scores %v, not below %v", c.Request, c.Endpoints, i, after[i], floor)
					}
				}
			}
		})
	}
}

// TestScoreAfter: worked after-scores. A placement moves only its own endpoint's score, against
// the bounds of the cycle as it is; an endpoint that leaves the group ranks below every one in it.
func TestScoreAfter(t *testing.T) {
	nonStreaming := func(ttftSLO float64) sdk.Request { return sdk.Request{SLO: sdk.SLO{TTFTMs: ttftSLO}} }
	// TTFT 250, 200, 150 ms, placed 350, 240, 190; TPOT 10 (no objective: by latency, no spread).
	meeting := []sdk.Endpoint{withAfter(ep("a", 250, 10), 100), withAfter(ep("b", 200, 10), 40), withAfter(ep("c", 150, 10), 40)}
	tests := []struct {
		name              string
		params            string
		request           sdk.Request
		endpoints         []sdk.Endpoint
		wantScores, wantA []float64
	}{
		{
			name: "no SLO: against the current spans, below 0 past the worst",
			// Bounds TTFT −300..−100 (span 200), TPOT −30..−10 (span 20); combined = .8·nT + .2·nP.
			// a 150: nT .75, nP .5 → .7; b 250: nT .25, nP 1 → .4; c 350: nT −.25, nP 0 → −.2.
			endpoints:  []sdk.Endpoint{withAfter(ep("a", 100, 20), 50), withAfter(ep("b", 200, 10), 50), withAfter(ep("c", 300, 30), 50)},
			wantScores: []float64{ranked(0.9), ranked(0.6), ranked(0)},
			wantA:      []float64{ranked(0.7), ranked(0.4), ranked(-0.2)}, // .703, .406, −.188
		},
		{
			name:   "most: a leaves the meeting group and no endpoint misses now",
			params: `{"headroomSelectionStrategy":"most"}`, request: nonStreaming(300), endpoints: meeting,
			// Headroom 50, 100, 150 (span 100), placed −50, 60, 110. b .1, c .6; a misses:
			// outsideScore, 0.01 below the lower of 0 and b's and c's after-scores.
			wantScores: []float64{ranked(0), ranked(0.5), ranked(1)},
			wantA:      []float64{-minRankedScore, ranked(0.1), ranked(0.6)}, // −.01, .109, .604
		},
		{
			name:   "most: a leaves the group, b placed down to its boundary scores below 0",
			params: `{"headroomSelectionStrategy":"most"}`, request: nonStreaming(300),
			endpoints: []sdk.Endpoint{meeting[0], withAfter(ep("b", 200, 10), 100), meeting[2]},
			// b placed: headroom 0, n −.5 → .01 − .495 = −.485; a 0.01 below it.
			wantScores: []float64{ranked(0), ranked(0.5), ranked(1)},
			wantA:      []float64{ranked(-0.5) - minRankedScore, ranked(-0.5), ranked(0.6)},
		},
		{
			name:    "least: closer to the boundary is better, until the boundary",
			request: nonStreaming(300), endpoints: meeting,
			// −headroom −50, −100, −150 (span 100), placed b −60 (.9), c −110 (.4); a misses.
			wantScores: []float64{ranked(1), ranked(0.5), ranked(0)},
			wantA:      []float64{-minRankedScore, ranked(0.9), ranked(0.4)},
		},
		{
			name:    "none meets: a placement leaves the idle set",
			request: nonStreaming(300),
			// Idle a and b ranked by deficit 100, 200; c is busy. Placed, nobody is idle.
			endpoints:  []sdk.Endpoint{withAfter(idle(ep("a", 400, 10)), 50), withAfter(idle(ep("b", 500, 10)), 50), withAfter(ep("c", 350, 10), 50)},
			wantScores: []float64{1, ranked(0), 0},
			wantA:      []float64{-minRankedScore, -minRankedScore, -minRankedScore},
		},
		{
			name:    "none meets: an after-prediction below the prediction moves a above the group",
			request: nonStreaming(300),
			// Busy a and b miss TTFT by 50 and 100; a placed meets (290): 0.01 above the higher
			// of 1 and b's after-score; b placed misses by 150: n (−150 + 100)/50 = −1.
			endpoints:  []sdk.Endpoint{withAfter(ep("a", 350, 10), -60), withAfter(ep("b", 400, 10), 50)},
			wantScores: []float64{1, ranked(0)},
			wantA:      []float64{1 + minRankedScore, ranked(-1)}, // 1.01, −.98
		},
		{
			name: "equal endpoints: the scale is one placement, the largest",
			// All score 1. TTFT moves 50, 50, 25: a 50 ms move takes the whole scale.
			endpoints:  []sdk.Endpoint{withAfter(ep("a", 100, 10), 50), withAfter(ep("b", 100, 10), 50), withAfter(ep("c", 100, 10), 25)},
			wantScores: []float64{1, 1, 1},
			wantA:      []float64{ranked(0), ranked(0), ranked(0.5)},
		},
		{
			name: "no predictions: the fallback's queue bounds held",
			// In flight 1, 1, 0, 0: queue term (1 − q)/1, placed q + 1; score = (term + 0)/2.
			endpoints:  []sdk.Endpoint{load("a", 0, 1, 0), load("b", 0, 1, 0), load("c", 0, 0, 0), load("d", 0, 0, 0)},
			wantScores: []float64{0, 0, 0.5, 0.5},
			wantA:      []float64{-0.5, -0.5, 0, 0},
		},
		{
			name: "no predictions, equal queues: the scale is one request",
			// Term 1 − (q − 3), placed 0; prefix 1: (1 + 1)/2, then (0 + 1)/2.
			endpoints:  []sdk.Endpoint{load("a", 0, 3, 1), load("b", 0, 3, 1)},
			wantScores: []float64{1, 1},
			wantA:      []float64{0.5, 0.5},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := configured(t, tc.params)
			c := &sdk.Cycle{Round: sdk.Round{Size: 2}, Request: tc.request, Endpoints: tc.endpoints}
			scores, after := scoresOf(t, s, c)
			for i := range scores {
				if math.Abs(scores[i]-tc.wantScores[i]) > tol || math.Abs(after[i]-tc.wantA[i]) > tol {
					t.Errorf("endpoint %d: score %.6f, after %.6f; want %.6f, %.6f", i, scores[i], after[i], tc.wantScores[i], tc.wantA[i])
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

// BenchmarkScoreAfter times ScoreAfter beside Score on a cycle of 100 endpoints with an SLO: one
// pass to take the frame and one to rank every endpoint placed in it.
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
	b.Run("Score", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Score(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
