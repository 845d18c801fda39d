package workload

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestShareGPT(t *testing.T) {
	const n = 20000
	w, err := Scenario("sharegpt", Params{Servers: 8, Requests: n, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	checkBlockCounts(t, w.Requests)
	checkRate(t, w.Requests, DefaultShareGPT.RatePerServer*8)
	var ins, outs []int
	for _, r := range w.Requests {
		if r.SessionID != "" || r.Turn != 1 {
			t.Fatalf("request %d: session %q turn %d, want single-turn", r.ID, r.SessionID, r.Turn)
		}
		ins, outs = append(ins, r.InputTokens), append(outs, r.OutputTokens)
	}
	for _, x := range []struct {
		what string
		got  []int
		d    Dist
	}{{"input", ins, DefaultShareGPT.Input}, {"output", outs, DefaultShareGPT.Output}} {
		if lo, hi := slices.Min(x.got), slices.Max(x.got); lo < x.d.Min || hi > x.d.Max {
			t.Errorf("%s lengths span [%d, %d], want within [%d, %d]", x.what, lo, hi, x.d.Min, x.d.Max)
		}
		// i.i.d. draws: 4 standard errors, the unclamped StdDev bounding the clamped one.
		tol := 4 * x.d.StdDev / math.Sqrt(n)
		if m := mean(x.got); math.Abs(m-x.d.Mean) > tol {
			t.Errorf("%s mean %.1f, want %.2f ± %.1f (vLLM paper, Fig. 11)", x.what, m, x.d.Mean, tol)
		}
		// Log-normal shape: the median sits at mean·e^(−σ²/2) = mean/√e for σ = 1.
		med := median(x.got)
		if want := x.d.Mean / math.Sqrt(math.E); math.Abs(med/want-1) > 0.05 {
			t.Errorf("%s median %.0f, want %.0f ± 5%%", x.what, med, want)
		}
	}
	if h := PrefixHitRatio(w.Requests); h != 0 {
		t.Errorf("hit ratio %.4f, want 0: ShareGPT prompts share nothing", h)
	}
}

func median(xs []int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

func TestProductionLadder(t *testing.T) {
	tests := []struct {
		name       string
		p          Params
		wantStages int
	}{
		{"one pass of the blog's ladder", Params{Servers: 13, Seed: 1}, 8},
		{"repeats until the requests", Params{Servers: 8, Requests: 5000, Seed: 2}, 0},
		{"reshaped", Params{Servers: 2, Seed: 3, RatePerServer: 4, LowRatePerServer: 1, Stages: 4, StageDuration: 30 * time.Second}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Scenario("production", tt.p)
			if err != nil {
				t.Fatal(err)
			}
			checkBlockCounts(t, w.Requests)
			if tt.p.Requests > 0 && len(w.Requests) != tt.p.Requests {
				t.Fatalf("got %d requests, want %d", len(w.Requests), tt.p.Requests)
			}
			if tt.wantStages > 0 && len(w.Stages) != tt.wantStages {
				t.Fatalf("got %d stages, want %d", len(w.Stages), tt.wantStages)
			}
			// Within one pass, each stage holds a Poisson count with mean rate·duration:
			// allow 4 standard deviations.
			var cycle time.Duration
			for _, s := range w.Stages {
				cycle += s.Duration
			}
			for i, s := range w.Stages {
				got := 0
				for _, r := range w.Requests {
					if r.Arrival < cycle && r.Arrival >= s.Start && r.Arrival < s.Start+s.Duration {
						got++
					}
				}
				want := s.Rate * s.Duration.Seconds()
				if math.Abs(float64(got)-want) > 4*math.Sqrt(want)+1 {
					t.Errorf("stage %d (%.3f req/s for %v): %d requests, want %.1f", i, s.Rate, s.Duration, got, want)
				}
				if low := i%2 == 0; low != (s.Rate < w.Stages[(i+1)%len(w.Stages)].Rate) {
					t.Errorf("stage %d: rate %.3f does not alternate low/high", i, s.Rate)
				}
			}
		})
	}
}

func TestProductionProfile(t *testing.T) {
	const n = 20000
	w, err := Scenario("production", Params{Servers: 8, Requests: n, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultProduction
	s := Summarize(w.Requests)
	if s.InputMax > c.Input.Max || s.OutputMax > c.Output.Max || s.InputMin < 1 || s.OutputMin < 1 {
		t.Errorf("lengths span input [%d, %d], output [%d, %d], want within [1, %d] and [1, %d]", s.InputMin, s.InputMax, s.OutputMin, s.OutputMax, c.Input.Max, c.Output.Max)
	}
	// A conversation draws its prompt length once, so the input sample holds one draw per
	// conversation: the mean's standard error is StdDev/√conversations. Outputs are per request.
	if tol := 4 * c.Input.StdDev / math.Sqrt(float64(s.Sessions)); math.Abs(s.InputMean-c.Input.Mean) > tol {
		t.Errorf("input mean %.0f, want %.0f ± %.0f", s.InputMean, c.Input.Mean, tol)
	}
	if tol := 4 * c.Output.StdDev / math.Sqrt(n); math.Abs(s.OutputMean-c.Output.Mean) > tol {
		t.Errorf("output mean %.0f, want %.0f ± %.0f", s.OutputMean, c.Output.Mean, tol)
	}
	// The heavy tail makes the mean a weak check: the log-median must sit at the log-normal's μ,
	// within 4 standard errors of a median (1.2533·σ/√conversations in log space).
	is, _ := newSampler(c.Input)
	if tol := 4 * 1.2533 * is.sigma / math.Sqrt(float64(s.Sessions)); math.Abs(math.Log(medianInput(w.Requests))-is.mu) > tol {
		t.Errorf("input median %.0f, want %.0f (×/÷ e^%.2f)", medianInput(w.Requests), math.Exp(is.mu), tol)
	}
	// Conversations average TurnsPerConversation turns.
	if got := float64(n) / float64(s.Sessions); math.Abs(got/c.TurnsPerConversation-1) > 0.15 {
		t.Errorf("%.1f turns per conversation, want %.0f ± 15%%", got, c.TurnsPerConversation)
	}
	// The blog's ~94% prefix-cache hit: PrefixFraction·(1 − 1/turns) = 0.99·0.95 = 0.9405.
	if h := PrefixHitRatio(w.Requests); math.Abs(h-0.94) > 0.02 {
		t.Errorf("infinite-cache prefix hit ratio %.3f, want 0.94 ± 0.02", h)
	} else {
		t.Logf("input mean %.0f (median %.0f), output mean %.0f, %d conversations, hit ratio %.4f", s.InputMean, medianInput(w.Requests), s.OutputMean, s.Sessions, h)
	}
	// Every turn of a conversation repeats the context's blocks and nothing else.
	first := map[string][]uint64{}
	for _, r := range w.Requests {
		f, ok := first[r.SessionID]
		if !ok {
			first[r.SessionID] = r.Blocks
			continue
		}
		shared := int(c.PrefixFraction*float64(r.InputTokens)) / BlockSize
		if commonPrefix(f, r.Blocks) != shared {
			t.Fatalf("request %d: shares %d blocks with its conversation's first turn, want %d", r.ID, commonPrefix(f, r.Blocks), shared)
		}
	}
}

func medianInput(reqs []Request) float64 {
	var xs []int
	for _, r := range reqs {
		xs = append(xs, r.InputTokens)
	}
	return median(xs)
}

func TestClasses(t *testing.T) {
	classes := []Class{
		{Name: "interactive", Weight: 0.7, SLO: SLO{TTFTMs: 200, TPOTMs: 50}, Priority: 1, Streaming: true},
		{Name: "batch", Weight: 0.2, Priority: 0},
		{Name: "sheddable", Weight: 0.1, SLO: SLO{TTFTMs: 2000}, Priority: -1, Streaming: true},
		{Name: "never", Weight: 0, Priority: 9},
	}
	const n = 20000
	w, err := Scenario("sharegpt", Params{Requests: n, Seed: 9, Classes: classes})
	if err != nil {
		t.Fatal(err)
	}
	count := map[int32]int{}
	for _, r := range w.Requests {
		count[r.Priority]++
		var c Class
		for _, k := range classes {
			if k.Priority == r.Priority {
				c = k
			}
		}
		if r.SLO != c.SLO || r.Streaming != c.Streaming {
			t.Fatalf("request %d: %+v streaming %v, want class %q's %+v streaming %v", r.ID, r.SLO, r.Streaming, c.Name, c.SLO, c.Streaming)
		}
	}
	for _, c := range classes {
		got := float64(count[c.Priority]) / n
		tol := 4 * math.Sqrt(c.Weight*(1-c.Weight)/n) // binomial standard error
		if math.Abs(got-c.Weight) > tol {
			t.Errorf("class %q drawn %.4f of the time, want %.2f ± %.4f", c.Name, got, c.Weight, tol)
		}
	}
	// Classes draw from their own stream: lengths and arrivals are those of the run without.
	plain, _ := Scenario("sharegpt", Params{Requests: n, Seed: 9})
	for i := range plain.Requests {
		a, b := plain.Requests[i], w.Requests[i]
		if a.Arrival != b.Arrival || a.InputTokens != b.InputTokens || !a.Streaming || a.Priority != 0 || a.SLO != (SLO{}) {
			t.Fatalf("request %d differs beyond its class, or the default class is not streaming without SLO", i)
		}
	}
}

func TestScenarioErrors(t *testing.T) {
	tests := []struct {
		name, scenario string
		p              Params
		want           string
	}{
		{"unknown", "E", Params{}, `unknown scenario "E"`},
		{"trace without path", "mooncake", Params{}, "TracePath"},
		{"missing trace", "azure-conv", Params{TracePath: "/nonexistent.csv"}, "opening trace"},
		{"negative rate", "A", Params{RatePerServer: -1}, "rate per server"},
		{"bad window", "azure-code", Params{TracePath: "x", Window: Window{Start: 2 * time.Second, End: time.Second}}, "window"},
		{"zero class weights", "A", Params{Classes: []Class{{Weight: 0}}}, "weights"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Scenario(tt.scenario, tt.p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestNamesAllGenerate(t *testing.T) {
	for _, name := range Names() {
		if strings.HasPrefix(name, "azure") || name == "mooncake" {
			continue // need a trace file: see trace_test.go
		}
		if _, err := Scenario(name, Params{Requests: 100}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
