package scorer

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

const tol = 1e-6

// ep returns a busy endpoint (one request in flight) with a valid prediction.
func ep(id string, ttft, tpot float64) sdk.Endpoint {
	return sdk.Endpoint{
		ID:         id,
		State:      sdk.EndpointState{InflightRequests: 1},
		Prediction: sdk.Prediction{Valid: true, TTFTMs: ttft, TPOTMs: tpot},
	}
}

// idle returns e with nothing in flight.
func idle(e sdk.Endpoint) sdk.Endpoint {
	e.State.InflightRequests = 0
	return e
}

// running returns e with a running request whose TPOT objective is tpotSLO.
func running(e sdk.Endpoint, tpotSLO float64) sdk.Endpoint {
	e.State.MinRunningTPOTSLOMs = tpotSLO
	return e
}

// noPred returns a busy endpoint without a prediction.
func noPred(id string) sdk.Endpoint {
	return sdk.Endpoint{ID: id, State: sdk.EndpointState{InflightRequests: 1}}
}

// load returns an endpoint without a prediction and with the composite fallback's signals.
func load(id string, kv float64, inflight int64, prefix float64) sdk.Endpoint {
	return sdk.Endpoint{ID: id, State: sdk.EndpointState{KVCacheUsage: kv, InflightRequests: inflight, PrefixMatch: prefix}}
}

// waiting returns e with n requests in its scraped waiting queue.
func waiting(e sdk.Endpoint, n int64) sdk.Endpoint {
	e.State.Waiting = n
	return e
}

// ranked maps v in [0, 1] onto a ranked endpoint's score, as rank does.
func ranked(v float64) float64 { return minRankedScore + (1-minRankedScore)*v }

func TestScore(t *testing.T) {
	streaming := func(ttft, tpot float64) sdk.Request {
		return sdk.Request{Streaming: true, SLO: sdk.SLO{TTFTMs: ttft, TPOTMs: tpot}}
	}
	batch := func(ttft, tpot float64) sdk.Request {
		return sdk.Request{SLO: sdk.SLO{TTFTMs: ttft, TPOTMs: tpot}}
	}
	tests := []struct {
		name      string
		params    string
		request   sdk.Request
		endpoints []sdk.Endpoint
		want      []float64
	}{
		{
			name: "no predictions: composite fallback",
			// In flight 0, 4, 2: queue term (4 − q)/4; the KV usage is not read by default:
			// score = ((4 − q)/4 + prefix) / 2.
			endpoints: []sdk.Endpoint{load("a", 0.2, 0, 0.5), load("b", 0.6, 4, 0), load("c", 1, 2, 1)},
			want: []float64{
				(1 + 0.5) / 2, // a: 0.75
				(0 + 0) / 2.0, // b: 0
				(0.5 + 1) / 2, // c: 0.75
			},
		},
		{
			name: "no predictions: the fallback's queue is the router's in-flight count",
			// a's scraped waiting gauge is empty but 6 of the router's requests are there; the
			// gauges b and c show are not read. In flight 6, 4, 2: queue term (6 − q)/4;
			// score = ((6 − q)/4 + prefix) / 2.
			endpoints: []sdk.Endpoint{load("a", 0.2, 6, 0.5), waiting(load("b", 0.6, 4, 0), 9), waiting(load("c", 1, 2, 1), 9)},
			want: []float64{
				(0 + 0.5) / 2, // a: 0.25
				(0.5 + 0) / 2, // b: 0.25
				(1 + 1.0) / 2, // c: 1
			},
		},
		{
			name:   "no predictions: composite fallback with configured weights",
			params: `{"kvCacheWeight": 2, "queueWeight": 0, "prefixWeight": 0, "queueSource": "waiting"}`,
			// score = 2·(1 − kv) / 2.
			endpoints: []sdk.Endpoint{load("a", 0.2, 0, 0.5), load("b", 0.6, 4, 0)},
			want:      []float64{0.8, 0.4},
		},
		{
			name: "a valid prediction with a NaN counts as none",
			// Both fall back: nothing in flight so the queue term is 1, no prefix: (1 + 0)/2 each.
			endpoints: []sdk.Endpoint{
				{ID: "a", Prediction: sdk.Prediction{Valid: true, TTFTMs: math.NaN()}},
				load("b", 0.5, 0, 0),
			},
			want: []float64{0.5, 0.5},
		},
		{
			name: "no SLO: lowest predicted latency wins",
			// TTFT 100..300 → n 0, .5, 1; TPOT 10..30 → n .5, 0, 1; combined = .8·nT + .2·nP
			// = .1, .4, 1; score = ranked(1 − combined); d has no prediction.
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 200, 10), ep("c", 300, 30), noPred("d")},
			want:      []float64{ranked(0.9), ranked(0.6), ranked(0), 0}, // .901, .604, .01, 0
		},
		{
			name: "no SLO: a dimension without spread gets weight 0",
			// TPOT equal → weight 0; TTFT alone: n a 0, b 1 → a 1, b .01.
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 200, 20)},
			want:      []float64{1, ranked(0)},
		},
		{
			name:      "no SLO: no spread scores every predicted endpoint 1",
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 100, 20), noPred("c")},
			want:      []float64{1, 1, 0},
		},
		{
			name:    "TTFT SLO, all meet, least",
			request: batch(500, 0),
			// Headroom 400, 200, 50 (TPOT +Inf everywhere: no spread). n = 1, 150/350, 0;
			// least = 1 − n → a .01, b ranked(.571429) = .575714, c 1.
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 300, 20), ep("c", 450, 20)},
			want:      []float64{ranked(0), ranked(200.0 / 350), 1},
		},
		{
			name:    "TTFT SLO, all meet, most",
			params:  `{"headroomSelectionStrategy": "most"}`,
			request: batch(500, 0),
			// Same n = 1, 150/350, 0; most = n → a 1, b ranked(.428571) = .434286, c .01.
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 300, 20), ep("c", 450, 20)},
			want:      []float64{1, ranked(150.0 / 350), ranked(0)},
		},
		{
			name:    "TTFT-only SLO, streaming: TPOT ranked by predicted latency",
			params:  `{"headroomSelectionStrategy": "most"}`,
			request: streaming(500, 0),
			// TTFT headroom a 400, b 200: most, nT a 1, b 0. No TPOT objective anywhere: TPOT by
			// latency, a 40 (nP 0), b 20 (1). combined a .8, b .2.
			endpoints: []sdk.Endpoint{ep("a", 100, 40), ep("b", 300, 20)},
			want:      []float64{ranked(0.8), ranked(0.2)},
		},
		{
			name:    "TTFT-only SLO, a TPOT unknown on one endpoint: TPOT not ranked",
			params:  `{"headroomSelectionStrategy": "most"}`,
			request: streaming(500, 0),
			// b's TPOT 0 is "unknown", not the fastest: TPOT gets weight 0; TTFT a 1, b 0.
			endpoints: []sdk.Endpoint{ep("a", 100, 40), ep("b", 300, 0)},
			want:      []float64{1, ranked(0)},
		},
		{
			name:    "TTFT-only SLO, all miss: the TTFT deficit, then TPOT by latency",
			request: streaming(50, 0),
			// Deficits a 50, b 250 (nT a 1, b 0); TPOT by latency a 40 (0), b 20 (1).
			endpoints: []sdk.Endpoint{ep("a", 100, 40), ep("b", 300, 20)},
			want:      []float64{ranked(0.8), ranked(0.2)},
		},
		{
			name:    "mixed: only endpoints meeting the SLO are ranked",
			request: streaming(500, 50),
			// a (400, 10) and b (200, 30) meet; c (−100, 30) misses; d has no prediction.
			// TTFT n: a 1, b 0; TPOT n: a 0, b 1; combined a .8, b .2; least: a ranked(.2) = .208,
			// b ranked(.8) = .802.
			endpoints: []sdk.Endpoint{ep("a", 100, 40), ep("b", 300, 20), ep("c", 600, 20), noPred("d")},
			want:      []float64{ranked(0.2), ranked(0.8), 0, 0},
		},
		{
			name:    "TPOT-only SLO, streaming",
			request: streaming(0, 50),
			// No TTFT objective: TTFT ranked by predicted latency, a 100 (nT 1), b 900 (0). TPOT
			// headroom a 30, b 5, c −10 (misses); least: nP a 0, b 1. combined a .8, b .2.
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 900, 45), ep("c", 100, 60)},
			want:      []float64{ranked(0.8), ranked(0.2), 0},
		},
		{
			name:    "TPOT-only SLO, not streaming: no objective applies, lowest latency wins",
			request: batch(0, 50),
			// As without an SLO: nT a 0, b 1; nP a 1, b 0; combined a .2, b .8 → ranked(.8), ranked(.2).
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 300, 10)},
			want:      []float64{ranked(0.8), ranked(0.2)},
		},
		{
			name:    "a running request's tighter TPOT objective applies",
			request: streaming(500, 50),
			// a: min(50, 30) − 40 = −10 misses; b: 50 − 40 = 10 meets, alone → no spread → 1.
			endpoints: []sdk.Endpoint{running(ep("a", 100, 40), 30), ep("b", 300, 40)},
			want:      []float64{0, 1},
		},
		{
			name:    "sloBufferFactor scales the TPOT objective",
			params:  `{"sloBufferFactor": 0.5}`,
			request: streaming(0, 50),
			// Objective 50·0.5 = 25: a 25 − 20 = 5 meets (alone → 1), b 25 − 30 = −5 misses.
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 100, 30)},
			want:      []float64{1, 0},
		},
		{
			name:    "+Inf headroom beside finite headroom ranks as the most headroom",
			request: streaming(500, 0),
			// TTFT headroom 400 both (no spread). TPOT: a min(0→none, 40) − 30 = 10, b +Inf.
			// n a 0, b 1; least: a 1, b .01.
			endpoints: []sdk.Endpoint{running(ep("a", 100, 30), 40), ep("b", 100, 30)},
			want:      []float64{1, ranked(0)},
		},
		{
			name:    "all miss: idle endpoints are preferred",
			request: batch(100, 0),
			// Idle b (deficit 400) and d (800) form the TTFT-only group; n b 0, d 1; least: b 1,
			// d .01; busy a and c score 0 although their deficits are smaller.
			endpoints: []sdk.Endpoint{ep("a", 300, 20), idle(ep("b", 500, 20)), ep("c", 200, 20), idle(ep("d", 900, 20))},
			want:      []float64{0, 1, 0, ranked(0)},
		},
		{
			name:    "all miss: TPOT-only misses first",
			request: streaming(500, 50),
			// a misses both, d TTFT only; b (TTFT 100, TPOT −20) and c (50, −5) miss TPOT only.
			// TTFT deficits 0, 0 (no spread); TPOT deficits 20, 5 → n b 1, c 0; least: b .01, c 1.
			endpoints: []sdk.Endpoint{ep("a", 600, 60), ep("b", 400, 70), ep("c", 450, 55), ep("d", 700, 40)},
			want:      []float64{0, ranked(0), 1, 0},
		},
		{
			name:    "all miss: most is ignored for a missing group",
			params:  `{"headroomSelectionStrategy": "most"}`,
			request: streaming(500, 50),
			// Same as above: the group is always ranked with least.
			endpoints: []sdk.Endpoint{ep("a", 600, 60), ep("b", 400, 70), ep("c", 450, 55), ep("d", 700, 40)},
			want:      []float64{0, ranked(0), 1, 0},
		},
		{
			name:    "all miss: TTFT-only misses next",
			request: streaming(500, 50),
			// a misses both; d (−200, 10) and e (−50, 5) miss TTFT only. TTFT deficits 200, 50 →
			// n d 1, e 0; TPOT deficits 0, 0; least: d .01, e 1.
			endpoints: []sdk.Endpoint{ep("a", 600, 60), ep("d", 700, 40), ep("e", 550, 45)},
			want:      []float64{0, ranked(0), 1},
		},
		{
			name:    "all miss: both missing last",
			request: streaming(500, 50),
			// Deficits a (100, 10), f (300, 2), g (200, 20). TTFT n 0, 1, .5; TPOT n 8/18, 0, 1;
			// combined a .2·8/18 = .088889, f .8, g .4 + .2 = .6;
			// least: a ranked(.911111) = .912, f ranked(.2) = .208, g ranked(.4) = .406.
			endpoints: []sdk.Endpoint{ep("a", 600, 60), ep("f", 800, 52), ep("g", 700, 70)},
			want:      []float64{ranked(1 - 0.2*8/18), ranked(0.2), ranked(0.4)},
		},
		{
			name:    "all miss: a group without spread scores 1",
			request: streaming(500, 50),
			// Identical deficits (100, 10): no dimension has spread.
			endpoints: []sdk.Endpoint{ep("a", 600, 60), ep("b", 600, 60)},
			want:      []float64{1, 1},
		},
		{
			name:    "the only dimension with spread has weight 0: every member scores 1",
			params:  `{"ttftWeight": 1, "tpotWeight": 0}`,
			request: streaming(0, 50),
			// TTFT +Inf (no spread); TPOT headroom 30 vs 5 has spread but weight 0.
			endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 100, 45)},
			want:      []float64{1, 1},
		},
		{
			name: "no endpoints",
			want: []float64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			if err := s.Configure([]byte(tt.params)); err != nil {
				t.Fatalf("Configure(%s): %v", tt.params, err)
			}
			c := &sdk.Cycle{Request: tt.request, Endpoints: tt.endpoints}
			got, err := s.Score(context.Background(), c)
			if err != nil {
				t.Fatalf("Score: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Score returned %d scores, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > tol || got[i] < 0 || got[i] > 1 {
					t.Errorf("score[%d] (%s) = %.6f, want %.6f", i, tt.endpoints[i].ID, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestScoreNilCycle(t *testing.T) {
	if _, err := New().Score(context.Background(), nil); err == nil {
		t.Fatal("Score(nil) succeeded, want an error")
	}
}

// TestFallbackBurstSpreads: with no predictions, a burst of arrivals between two scrapes (every
// one sees the same stale gauges, where one endpoint looks idle) spreads evenly over the
// endpoints: the fallback reads the router's in-flight count, which moves with every dispatch.
func TestFallbackBurstSpreads(t *testing.T) {
	const arrivals = 40
	s := New()
	c := &sdk.Cycle{Endpoints: []sdk.Endpoint{load("a", 0, 0, 0), waiting(load("b", 0.9, 0, 0), 5),
		waiting(load("c", 0.9, 0, 0), 5), waiting(load("d", 0.9, 0, 0), 5)}}
	for n := range uint64(arrivals) {
		scores, err := s.Score(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		best := heuristics.RankByScore(scores, rand.New(rand.NewPCG(n, 3)))[0]
		c.Endpoints[best].State.InflightRequests++
		c.Endpoints[best].State.DispatchedSinceScrape++
	}
	for _, e := range c.Endpoints {
		if e.State.InflightRequests != arrivals/4 {
			t.Errorf("endpoint %s took %d of %d arrivals, want %d", e.ID, e.State.InflightRequests, arrivals, arrivals/4)
		}
	}
}
