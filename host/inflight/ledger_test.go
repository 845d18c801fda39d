package inflight

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// state fills an endpoint's state at t0 + 100 ms, scraped at t0 (so a request dispatched at the zero
// time does not count as dispatched since the scrape).
func state(t *Ledger, ep string) sdk.EndpointState {
	var s sdk.EndpointState
	t.Fill(ep, t0.Add(100*time.Millisecond), t0, &s)
	return s
}

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestLifecycle(t *testing.T) {
	tr := New()
	r1 := tr.Dispatch("a", Request{ID: "r1", PrefillTokens: 1000, OutputTokens: 100, TPOTSLOMs: 50})
	r2 := tr.Dispatch("a", Request{ID: "r2", PrefillTokens: 300, OutputTokens: 20}) // no SLO: masks nobody
	if dup := tr.Dispatch("a", Request{ID: "r2", PrefillTokens: 999}); dup != nil {
		t.Fatal("a duplicate dispatch returned a flight")
	}
	steps := []struct {
		name string
		do   func()
		want sdk.EndpointState
	}{
		{"two dispatched, the duplicate ignored; no output yet", func() {},
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 1300, MinRunningTPOTSLOMs: 50, LastOutputAgeMs: -1}},
		{"r1 first token at 20 ms: its 1000 prompt tokens leave, 100 − 1 outputs remain", func() { r1.FirstToken(at(20)) },
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 300, DecodeTokensInFlight: 99, MinRunningTPOTSLOMs: 50, LastOutputAgeMs: 80}},
		{"a second first token changes nothing", func() { r1.FirstToken(at(90)) },
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 300, DecodeTokensInFlight: 99, MinRunningTPOTSLOMs: 50, LastOutputAgeMs: 80}},
		{"r1 at 40 tokens at 60 ms: 60 remain, 39 tokens in 40 ms since its first", func() { r1.Tokens(40, at(60)) },
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 300, DecodeTokensInFlight: 60, MinRunningTPOTSLOMs: 50, LastOutputAgeMs: 40, RunningTPOTMs: 40.0 / 39}},
		{"stale token count ignored", func() { r1.Tokens(10, at(95)) },
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 300, DecodeTokensInFlight: 60, MinRunningTPOTSLOMs: 50, LastOutputAgeMs: 40, RunningTPOTMs: 40.0 / 39}},
		{"tokens before the first token are ignored", func() { r2.Tokens(5, at(95)) },
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 300, DecodeTokensInFlight: 60, MinRunningTPOTSLOMs: 50, LastOutputAgeMs: 40, RunningTPOTMs: 40.0 / 39}},
		{"r1 finishes: its SLO no longer applies", r1.Finish,
			sdk.EndpointState{InflightRequests: 1, PrefillTokensInFlight: 300, LastOutputAgeMs: 40}},
		{"a finished flight ignores everything", func() {
			r1.Tokens(90, at(99))
			r1.FirstToken(at(99))
			r1.Finish()
		}, sdk.EndpointState{InflightRequests: 1, PrefillTokensInFlight: 300, LastOutputAgeMs: 40}},
		{"r2 fails before its first token: nothing in flight", r2.Finish, sdk.EndpointState{LastOutputAgeMs: -1}},
		{"a nil flight ignores everything", func() {
			var f *Flight
			f.FirstToken(at(99))
			f.Tokens(5, at(99))
			f.Finish()
		}, sdk.EndpointState{LastOutputAgeMs: -1}},
	}
	for _, st := range steps {
		st.do()
		if got := state(tr, "a"); got != st.want {
			t.Fatalf("%s: state %+v, want %+v", st.name, got, st.want)
		}
		if n := tr.Requests("a"); int64(n) != st.want.InflightRequests {
			t.Fatalf("%s: Requests %d, want %d", st.name, n, st.want.InflightRequests)
		}
	}
	if n := tr.Requests("unknown"); n != 0 {
		t.Errorf("Requests on an unknown endpoint: %d", n)
	}
	if got := state(tr, "unknown"); got != (sdk.EndpointState{LastOutputAgeMs: -1}) {
		t.Errorf("unknown endpoint: %+v", got)
	}
}

func TestRedispatchAfterFinish(t *testing.T) {
	tr := New()
	tr.Dispatch("a", Request{ID: "r", PrefillTokens: 10, OutputTokens: 5}).Finish()
	if f := tr.Dispatch("a", Request{ID: "r", PrefillTokens: 20, OutputTokens: 5}); f == nil {
		t.Fatal("a finished id could not be dispatched again")
	}
	if got := state(tr, "a"); got.PrefillTokensInFlight != 20 || got.InflightRequests != 1 {
		t.Errorf("state %+v, want 1 in flight with 20 prefill tokens", got)
	}
}

func TestFillLeavesEngineFieldsAlone(t *testing.T) {
	tr := New()
	tr.Dispatch("a", Request{ID: "r", PrefillTokens: 10, OutputTokens: 5})
	s := sdk.EndpointState{KVCacheUsage: 0.4, Waiting: 3, Running: 7, PrefixMatch: 0.5, MetricsAgeMs: 20}
	tr.Fill("a", t0, t0, &s)
	want := sdk.EndpointState{KVCacheUsage: 0.4, Waiting: 3, Running: 7, PrefixMatch: 0.5, MetricsAgeMs: 20,
		InflightRequests: 1, PrefillTokensInFlight: 10, LastOutputAgeMs: -1}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
}

func TestDispatchedSinceScrape(t *testing.T) {
	tr := New()
	tr.Dispatch("a", Request{ID: "before", DispatchedAt: at(5)})
	tr.Dispatch("a", Request{ID: "at-scrape", DispatchedAt: at(10)}) // a scrape, then a dispatch at the same instant
	after := tr.Dispatch("a", Request{ID: "after", DispatchedAt: at(30)})
	tr.Dispatch("b", Request{ID: "other", DispatchedAt: at(30)})
	count := func(ep string, scrapedAt time.Time) int64 {
		var s sdk.EndpointState
		tr.Fill(ep, at(40), scrapedAt, &s)
		return s.DispatchedSinceScrape
	}
	tests := []struct {
		name      string
		ep        string
		scrapedAt time.Time
		want      int64
	}{
		{"never scraped: everything in flight", "a", time.Time{}, 3},
		{"scraped at 10 ms: the dispatches from 10 ms on", "a", at(10), 2},
		{"scraped at 35 ms: none", "a", at(35), 0},
		{"another endpoint counts its own", "b", at(10), 1},
		{"an endpoint the ledger never saw", "c", time.Time{}, 0},
	}
	for _, tt := range tests {
		if got := count(tt.ep, tt.scrapedAt); got != tt.want {
			t.Errorf("%s: DispatchedSinceScrape %d, want %d", tt.name, got, tt.want)
		}
	}
	after.Finish()
	if got := count("a", at(10)); got != 1 {
		t.Errorf("after a finish: DispatchedSinceScrape %d, want 1 (a finished request is no load)", got)
	}
}

// The start rate is measured over the last 16 first tokens at an endpoint: unknown (0) before
// 16, then 15 intervals over the time they span, following the most recent 16 as they come.
func TestFirstTokenRate(t *testing.T) {
	l := New()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rate := func(now time.Time) float64 {
		var s sdk.EndpointState
		l.Fill("a", now, t0, &s)
		return s.FirstTokenRate
	}
	at := t0
	for i := range 16 {
		if r := rate(at); r != 0 {
			t.Fatalf("after %d first tokens the rate is %v, want 0 (unknown)", i, r)
		}
		f := l.Dispatch("a", Request{ID: fmt.Sprint("r", i), DispatchedAt: at})
		at = at.Add(100 * time.Millisecond)
		f.FirstToken(at)
		f.Finish()
	}
	// 16 first tokens 100 ms apart: 15 intervals over 1.5 s, 10 a second.
	if r := rate(at); math.Abs(r-10) > 1e-9 {
		t.Errorf("16 first tokens 100 ms apart: rate %v, want 10", r)
	}
	// Sixteen more, 50 ms apart, replace them: 20 a second. The rate does not decay while nothing
	// starts.
	for i := range 16 {
		f := l.Dispatch("a", Request{ID: fmt.Sprint("s", i), DispatchedAt: at})
		at = at.Add(50 * time.Millisecond)
		f.FirstToken(at)
		f.Finish()
	}
	if r := rate(at.Add(time.Minute)); math.Abs(r-20) > 1e-9 {
		t.Errorf("16 first tokens 50 ms apart, a minute later: rate %v, want 20", r)
	}
	var other sdk.EndpointState
	if l.Fill("b", at, t0, &other); other.FirstTokenRate != 0 {
		t.Errorf("an endpoint with no first tokens has rate %v", other.FirstTokenRate)
	}
}

// RunningTPOTMs is the mean, over the requests in flight with two tokens or more, of the time from
// their first token to their latest over the tokens since the first.
func TestRunningTPOT(t *testing.T) {
	l := New()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tpot := func() float64 {
		var s sdk.EndpointState
		l.Fill("a", t0.Add(time.Minute), t0, &s)
		return s.RunningTPOTMs
	}
	a := l.Dispatch("a", Request{ID: "a", OutputTokens: 100, DispatchedAt: t0})
	b := l.Dispatch("b", Request{ID: "b", OutputTokens: 100, DispatchedAt: t0}) // another endpoint
	c := l.Dispatch("a", Request{ID: "c", OutputTokens: 100, DispatchedAt: t0})
	a.FirstToken(t0.Add(100 * time.Millisecond))
	if got := tpot(); got != 0 {
		t.Errorf("one first token, no second: %v, want 0", got)
	}
	// a: 4 more tokens over 80 ms, one chunk of 2 then two of 1: 20 ms a token.
	a.Tokens(3, t0.Add(140*time.Millisecond))
	a.Tokens(4, t0.Add(160*time.Millisecond))
	a.Tokens(5, t0.Add(180*time.Millisecond))
	b.FirstToken(t0.Add(100 * time.Millisecond))
	b.Tokens(2, t0.Add(200*time.Millisecond)) // 100 ms, but on b
	if got := tpot(); math.Abs(got-20) > 1e-9 {
		t.Errorf("a at 20 ms a token: %v, want 20", got)
	}
	// c: first token at 200 ms, its 10th at 560 ms: 40 ms a token. The mean of 20 and 40.
	c.FirstToken(t0.Add(200 * time.Millisecond))
	c.Tokens(10, t0.Add(560*time.Millisecond))
	if got := tpot(); math.Abs(got-30) > 1e-9 {
		t.Errorf("a at 20 and c at 40 ms a token: %v, want 30", got)
	}
	c.Finish()
	if got := tpot(); math.Abs(got-20) > 1e-9 {
		t.Errorf("c finished, a at 20: %v, want 20", got)
	}
	a.Finish()
	if got := tpot(); got != 0 {
		t.Errorf("nothing in flight: %v, want 0", got)
	}
}

func TestDiscountAndPrefill(t *testing.T) {
	tr := New()
	tr.Dispatch("a", Request{ID: "other", PrefillTokens: 500, OutputTokens: 10})
	d := tr.Dispatch("a", Request{ID: "me", OutputTokens: 40, DispatchedAt: at(50)}) // a decode hop: no prompt to compute
	s := state(tr, "a")
	tr.Discount("a", "me", t0, &s)
	if s.InflightRequests != 1 || s.DispatchedSinceScrape != 0 || s.PrefillTokensInFlight != 500 {
		t.Errorf("without its own flight: %+v, want the other request alone", s)
	}
	tr.Discount("a", "nobody", t0, &s) // not in flight there: nothing to take out
	tr.Discount("b", "me", t0, &s)
	if s.InflightRequests != 1 {
		t.Errorf("discounting what is not in flight changed %+v", s)
	}
	// Served whole after all: its prompt is computed there.
	d.Prefill(300)
	if s := state(tr, "a"); s.PrefillTokensInFlight != 800 {
		t.Errorf("prefill in flight %d after Prefill(300), want 800", s.PrefillTokensInFlight)
	}
	d.FirstToken(at(60))
	d.Prefill(999) // past its first token: nothing changes
	if s := state(tr, "a"); s.PrefillTokensInFlight != 500 || s.DecodeTokensInFlight != 39 {
		t.Errorf("after its first token: %+v", s)
	}
	s = state(tr, "a")
	tr.Discount("a", "me", t0, &s)
	if s.DecodeTokensInFlight != 0 || s.InflightRequests != 1 {
		t.Errorf("a decoding flight discounted: %+v", s)
	}
}
