package scorer

import (
	"context"
	"math"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// attainParams are the defaults with the attainment objective.
func attainParams() *Params {
	p := DefaultParams()
	p.Objective = ObjectiveAttainment
	return &p
}

// after returns e with the producer's after-predictions: one more placement raises its TTFT by
// dTTFT and its TPOT by dTPOT.
func after(e sdk.Endpoint, dTTFT, dTPOT float64) sdk.Endpoint {
	e.Prediction.TTFTAfterMs, e.Prediction.TPOTAfterMs = e.Prediction.TTFTMs+dTTFT, e.Prediction.TPOTMs+dTPOT
	return e
}

// spreads returns e with the producer's spreads of its TTFT and TPOT predictions.
func spreads(e sdk.Endpoint, ttft, tpot float64) sdk.Endpoint {
	e.Prediction.TTFTSpread, e.Prediction.TPOTSpread = ttft, tpot
	return e
}

// inflight returns e with n of the router's requests in flight.
func inflight(e sdk.Endpoint, n int64) sdk.Endpoint {
	e.State.InflightRequests = n
	return e
}

// The attainment objective's values, worked by hand (Φ from a table, spreads 0.45 and 0.5): an
// endpoint is worth P(TTFT ≤ objective) × P(TPOT ≤ objective), each Φ(ln(objective / predicted)
// / spread), less n × the probability each of the n requests in flight there loses when the
// placement raises their TPOT past the tightest objective running there.
func TestAttainValue(t *testing.T) {
	stream := sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 25}}
	tests := []struct {
		name string
		req  sdk.Request
		e    sdk.Endpoint
		want float64
	}{
		// Φ(ln(1000/600)/0.45) = Φ(1.1352) = 0.8719; Φ(ln(25/20)/0.5) = Φ(0.4463) = 0.6723.
		{"fast server: both objectives likely", stream, ep("fast", 600, 20), 0.8719 * 0.6723},
		// Φ(ln(1000/400)/0.45) = Φ(2.0362) = 0.9791; Φ(ln(25/40)/0.5) = Φ(−0.9400) = 0.1736.
		{"slow server: TTFT sure, TPOT unlikely", stream, ep("slow", 400, 40), 0.9791 * 0.1736},
		// A request that does not stream has no TPOT to meet.
		{"not streaming: TTFT alone", sdk.Request{SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 25}}, ep("slow", 400, 40), 0.9791},
		// The producer's spreads replace the configured ones: TTFT 0.2, TPOT 0.1 on this endpoint,
		// Φ(ln(1000/600)/0.2) = Φ(2.5541) = 0.99468; Φ(ln(25/24)/0.1) = Φ(0.4082) = 0.65844.
		{"the producer's spreads", stream, spreads(ep("narrow", 600, 24), 0.2, 0.1), 0.99468 * 0.65844},
		// TPOT unknown (0): nothing to judge it by.
		{"TPOT unknown", stream, ep("young", 400, 0), 0.9791},
		// 8 in flight under a 25 ms objective; the endpoint's TPOT is 23 ms now and 26 ms with the
		// request placed: each loses Φ(ln(25/23)/0.5) − Φ(ln(25/26)/0.5) = Φ(0.1668) −
		// Φ(−0.0784) = 0.5662 − 0.4687 = 0.0975. The request itself (objective 50 ms) sees 23 ms:
		// Φ(ln(1000/200)/0.45) = Φ(3.5765) = 0.99983, Φ(ln(50/23)/0.5) = Φ(1.5530) = 0.9398.
		{"a placement that pushes 8 in flight over their TPOT objective",
			sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 50}},
			after(inflight(running(ep("hot", 200, 23), 25), 8), 10, 3), 0.99983*0.9398 - 8*0.0975},
		// The same endpoint without after-predictions: the rise is not known, nothing is taken.
		{"no after-prediction: no loss counted",
			sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 50}},
			inflight(running(ep("hot", 200, 26), 25), 8), 0.99983 * 0.9045},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := attainValue(&tt.req, &tt.e, attainParams()); math.Abs(got-tt.want) > 2e-3 {
				t.Errorf("value %.4f, want %.4f", got, tt.want)
			}
		})
	}
}

// placementCost charges each request in flight that share of the rise: the 8 in flight of
// TestAttainValue's hot endpoint, charged a quarter of the 3 ms rise, go from 23 ms to 23.75 ms
// and each loses Φ(ln(25/23)/0.5) − Φ(ln(25/23.75)/0.5) = Φ(0.1668) − Φ(0.1026) = 0.5662 −
// 0.5409 = 0.0254, about a quarter of the full charge's 0.0975 (Φ is nearly straight there).
func TestAttainValuePlacementCost(t *testing.T) {
	r := sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 50}}
	e := after(inflight(running(ep("hot", 200, 23), 25), 8), 10, 3)
	p := attainParams()
	p.PlacementCost = 0.25
	if got, want := attainValue(&r, &e, p), 0.99983*0.9398-8*0.0254; math.Abs(got-want) > 2e-3 {
		t.Errorf("value %.4f, want %.4f", got, want)
	}
	p.PlacementCost = 0
	if got, want := attainValue(&r, &e, p), 0.99983*0.9398; math.Abs(got-want) > 2e-3 {
		t.Errorf("no placement cost: value %.4f, want %.4f", got, want)
	}
}

// With runningTPOT observed, a placement's cost counts the TPOT the requests running there have
// seen, not the TPOT predicted for this request. Two endpoints alike in their
// predictions (TTFT 100 ms, TPOT 18 ms, 22 ms with the request placed, spreads 0.2 and 0.1) and
// their 10 requests in flight under a 25 ms objective; the request is worth Φ(ln(1000/100)/0.2)
// × Φ(ln(25/18)/0.1) = Φ(11.513) × Φ(3.2850) = 1 × 0.99949 on either. On "near" its streams have
// run at 24 ms a token so far, and the placement's 4 ms takes each past the objective: it loses
// Φ(ln(25/24)/0.1) − Φ(ln(25/28)/0.1) = Φ(0.4082) − Φ(−1.1333) = 0.65844 − 0.12855 = 0.52990,
// so the endpoint is worth 0.99949 − 10 × 0.52990 = −4.2995. On "clear" they have run at 15 ms:
// Φ(5.1083) − Φ(ln(25/19)/0.1) = Φ(2.7444) = 1.00000 − 0.99697 = 0.00303, worth 0.99949 −
// 0.0303 = 0.9692. Read from the predictions instead (runningTPOT predicted) both run at 18 ms
// and lose Φ(3.2850) − Φ(ln(25/22)/0.1) = Φ(1.2783) = 0.99949 − 0.89943 = 0.10006 each: worth
// 0.99949 − 1.0006 = −0.0011 on either, a tie the observed TPOT breaks.
func TestAttainValueObservedRunningTPOT(t *testing.T) {
	r := sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 25}}
	seen := func(id string, tpot float64) sdk.Endpoint {
		e := spreads(after(inflight(running(ep(id, 100, 18), 25), 10), 0, 4), 0.2, 0.1)
		e.State.RunningTPOTMs = tpot
		return e
	}
	near, clear := seen("near", 24), seen("clear", 15)
	p := attainParams()
	for _, tt := range []struct {
		running     string
		near, clear float64
	}{
		{RunningObserved, -4.2995, 0.9692},
		{RunningPredicted, -0.0011, -0.0011},
	} {
		p.RunningTPOT = tt.running
		if got := attainValue(&r, &near, p); math.Abs(got-tt.near) > 2e-3 {
			t.Errorf("%s: near is worth %.4f, want %.4f", tt.running, got, tt.near)
		}
		if got := attainValue(&r, &clear, p); math.Abs(got-tt.clear) > 2e-3 {
			t.Errorf("%s: clear is worth %.4f, want %.4f", tt.running, got, tt.clear)
		}
	}
	// Before any stream there has two tokens (0) the predicted TPOT stands in.
	p.RunningTPOT = RunningObserved
	unseen := seen("unseen", 0)
	if got := attainValue(&r, &unseen, p); math.Abs(got-(-0.0011)) > 2e-3 {
		t.Errorf("no stream seen: worth %.4f, want -0.0011", got)
	}
}

// ttftShare trades expected attainment for TTFT. The fast server a (600 ms / 20 ms) is worth
// 0.8719 × 0.6723 = 0.5861 (TestAttainValue), b (250 ms / 24 ms) Φ(ln(1000/250)/0.45) ×
// Φ(ln(25/24)/0.5) = Φ(3.0807) × Φ(0.0816) = 0.9990 × 0.5325 = 0.5320, 0.0542 less. With the
// default share of 0.02 the value decides: a scores 0.01 + 0.99 × (0.98 + 0.02 / 1.6) = 0.9926,
// b 0.01 + 0.99 × (0.98 × 0.9458 + 0.02 / 1.25) = 0.9435. With 0.3, b's TTFT decides: a scores
// 0.01 + 0.99 × (0.7 + 0.3 / 1.6) = 0.8886, b 0.01 + 0.99 × (0.7 × 0.9458 + 0.3 / 1.25) = 0.9031.
// Against the fastest endpoint's TTFT (b's 250 ms) instead of the objective, a's 600 ms is 2.4
// times it: a scores 0.01 + 0.99 × (0.7 + 0.3 × 250 / 600) = 0.8268, b 0.01 + 0.99 × (0.7 ×
// 0.9458 + 0.3) = 0.9625.
func TestAttainmentTTFTShare(t *testing.T) {
	c := &sdk.Cycle{Request: sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 25}},
		Endpoints: []sdk.Endpoint{ep("a", 600, 20), ep("b", 250, 24)}}
	for _, tt := range []struct {
		params string
		want   []float64
	}{
		{`{"objective":"attainment"}`, []float64{0.9926, 0.9435}},
		{`{"objective":"attainment","ttftShare":0.3}`, []float64{0.8886, 0.9031}},
		{`{"objective":"attainment","ttftShare":0.3,"ttftReference":"fastest"}`, []float64{0.8268, 0.9625}},
	} {
		s := New()
		if err := s.Configure([]byte(tt.params)); err != nil {
			t.Fatal(err)
		}
		scores, err := s.Score(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		for i := range scores {
			if math.Abs(scores[i]-tt.want[i]) > 1e-3 {
				t.Errorf("%s: scores %.4f, want %.4f", tt.params, scores, tt.want)
				break
			}
		}
	}
}

// With the attainment objective the scorer sends a request to the endpoint where it is most
// likely to meet its objectives and costs the requests there least: a request that would meet
// TTFT but miss TPOT on a slow server goes to the fast one; a placement that would push the
// requests in flight over their TPOT objective scores below one that does not; where attainment
// is the same, the lower predicted TTFT wins; a request without objectives is ranked by
// predicted latency, as with the headroom objective.
func TestAttainmentPicks(t *testing.T) {
	stream := sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 25}}
	relaxed := sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 50}}
	tests := []struct {
		name string
		c    sdk.Cycle
		best int
	}{
		{"meets TTFT on both, TPOT only on the fast one", sdk.Cycle{Request: stream,
			Endpoints: []sdk.Endpoint{ep("slow", 400, 40), ep("fast", 600, 20)}}, 1},
		// hot: 0.904 − 8 × (Φ(ln(25/26)/0.5) − Φ(ln(25/29)/0.5)) = 0.904 − 8 × 0.0855 = 0.220;
		// cool (2 in flight, nothing running with an objective):
		// Φ(3.5765) × Φ(ln(50/30)/0.5) = 0.99983 × 0.8465 = 0.846.
		{"a placement that would push the running requests over their TPOT objective", sdk.Cycle{Request: relaxed,
			Endpoints: []sdk.Endpoint{after(inflight(running(ep("hot", 200, 26), 25), 8), 10, 3), after(inflight(ep("cool", 200, 30), 2), 10, 3)}}, 1},
		// late: Φ(ln(1000/1100)/0.45) × Φ(ln(25/15)/0.5) = 0.416 × 0.847 = 0.352; on time:
		// Φ(ln(1000/900)/0.45) × Φ(ln(25/30)/0.5) = 0.593 × 0.358 = 0.212. The late one is worth
		// more, but it is predicted over the TTFT objective: a lower tier, scored 0.
		{"over the TTFT objective: a lower tier, whatever its value", sdk.Cycle{Request: stream,
			Endpoints: []sdk.Endpoint{ep("late", 1100, 15), ep("on time", 900, 30)}}, 1},
		{"equal attainment: the lower TTFT", sdk.Cycle{Request: sdk.Request{SLO: sdk.SLO{TTFTMs: 60000}},
			Endpoints: []sdk.Endpoint{ep("a", 300, 20), ep("b", 200, 20), ep("c", 250, 20)}}, 1},
		{"no objective: by predicted latency", sdk.Cycle{Request: sdk.Request{Streaming: true},
			Endpoints: []sdk.Endpoint{ep("a", 300, 20), ep("b", 200, 20), ep("c", 250, 20)}}, 1},
	}
	s := New()
	if err := s.Configure([]byte(`{"objective":"attainment"}`)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores, err := s.Score(context.Background(), &tt.c)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range scores {
				if v < 0 || v > 1 || (i != tt.best && v >= scores[tt.best]) {
					t.Errorf("scores %v, want %s (%d) strictly first, all in [0, 1]", scores, tt.c.Endpoints[tt.best].ID, tt.best)
					break
				}
			}
		})
	}
}

// The after-scores of the attainment objective are each endpoint's score with one more request
// like this one placed there (its predictions moved to the after-predictions, one more in
// flight), so a round of requests spreads as one at a time: on two equal endpoints, the second
// request's best is the one the first did not take.
func TestAttainmentAfterScores(t *testing.T) {
	c := &sdk.Cycle{Round: sdk.Round{Size: 2}, Request: sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 25}},
		Endpoints: []sdk.Endpoint{after(ep("a", 700, 22), 150, 2), after(ep("b", 700, 22), 150, 2)}}
	s := New()
	if err := s.Configure([]byte(`{"objective":"attainment"}`)); err != nil {
		t.Fatal(err)
	}
	scores, err := s.Score(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	aft, err := s.ScoreAfter(context.Background(), c, scores)
	if err != nil {
		t.Fatal(err)
	}
	// Placed once: TTFT 850, TPOT 24, two in flight, no objective running: Φ(ln(1000/850)/0.45) ×
	// Φ(ln(25/24)/0.5) = Φ(0.3611) × Φ(0.0816) = 0.6410 × 0.5325.
	placed := sdk.Endpoint{State: sdk.EndpointState{InflightRequests: 2},
		Prediction: sdk.Prediction{Valid: true, TTFTMs: 850, TPOTMs: 24}}
	want := attainScore(&c.Request, &placed, attainValue(&c.Request, &placed, attainParams()),
		attainFrameOf(c, attainLooks(c, attainParams())), attainParams())
	if math.Abs(aft[0]-want) > tol || math.Abs(aft[1]-want) > tol || !(aft[0] < scores[1]) {
		t.Errorf("after-scores %v, want %.4f each, below the other endpoint's score %.4f", aft, want, scores[1])
	}
}

// The objective, the spreads, the TTFT share and reference and the placement cost are checked.
func TestAttainmentParams(t *testing.T) {
	for _, bad := range []string{`{"objective":"most"}`, `{"ttftSpread":0}`, `{"tpotSpread":-1}`, `{"tpotSpread":9}`,
		`{"ttftShare":-0.1}`, `{"ttftShare":1.5}`, `{"placementCost":-1}`, `{"placementCost":2}`,
		`{"ttftReference":"median"}`} {
		if err := New().Configure([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// In a disaggregated request's prefill decision the decode endpoint, which would serve the request
// whole, is always the faster first token: the TTFT share is measured against the fastest prefill
// endpoint, and the decode endpoint's quickness goes no higher than that one's. So the share ranks
// the prefill endpoints among themselves, and the whole request wins only on its value.
func TestAttainmentTTFTShareInAPrefillDecision(t *testing.T) {
	scorer := func(share string) *Scorer {
		s := New()
		if err := s.Configure([]byte(`{"objective":"attainment","ttftShare":` + share + `,"ttftReference":"fastest"}`)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s, flat := scorer("0.3"), scorer("0")
	r := sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: 1000, TPOTMs: 25},
		Disaggregation: sdk.Disaggregation{Hop: sdk.HopPrefill, DecodeEndpoint: "d"}}
	// Every way meets the objectives nearly alike; the decode endpoint d answers first.
	c := &sdk.Cycle{Request: r, Endpoints: []sdk.Endpoint{ep("p1", 300, 10), ep("p2", 600, 10), ep("d", 80, 10)}}
	scores, err := s.Score(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	values, _ := flat.Score(context.Background(), c)
	// p1 is quicker than p2; d is no quicker than p1: its lead over p1 is its value's alone,
	// (1 − share) of what it is without the share.
	if scores[0] <= scores[1] || math.Abs((scores[2]-scores[0])-0.7*(values[2]-values[0])) > 1e-9 {
		t.Errorf("scores %.4f (without the share %.4f): want p1 above p2, and d's lead over p1 its value's alone", scores, values)
	}
	// Outside a prefill decision the same endpoints are measured against the fastest of all.
	c.Request.Disaggregation = sdk.Disaggregation{}
	if scores, _ = s.Score(context.Background(), c); scores[2] <= scores[0] {
		t.Errorf("a whole request's scores %.4f: want d, the fastest, above p1", scores)
	}
	// The decode endpoint alone in the tier is measured against itself.
	c.Request.Disaggregation = r.Disaggregation
	c.Endpoints = []sdk.Endpoint{ep("p1", 3000, 10), ep("d", 80, 10)}
	if scores, _ = s.Score(context.Background(), c); scores[1] != 1 || scores[0] != 0 {
		t.Errorf("only d within the TTFT objective: scores %.4f, want 0 and 1", scores)
	}
}
