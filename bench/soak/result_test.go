package soak

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/bench/chaos"
	"github.com/foresight-router/foresight/internal/promtext"
)

// families parses an exposition of the router's request counter.
func families(t *testing.T, text string) promtext.Families {
	t.Helper()
	f, err := promtext.Parse(strings.NewReader("# TYPE foresight_requests_total counter\n" + text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestAccount(t *testing.T) {
	before := families(t, `foresight_requests_total{code="200"} 3`+"\n"+`foresight_requests_total{code="502"} 1`+"\n")
	tests := []struct {
		name                string
		after               string
		sent, clientFailed  int
		counted, countedBad int
		byCode              map[string]int
		ok                  bool
	}{
		// 13 − 3 = 10 under 200 and 2 − 1 = 1 under 502: 11 counted, 1 failed.
		{name: "every request counted", after: `foresight_requests_total{code="200"} 13` + "\n" + `foresight_requests_total{code="502"} 2` + "\n",
			sent: 11, clientFailed: 1, counted: 11, countedBad: 1, byCode: map[string]int{"200": 10, "502": 1}, ok: true},
		{name: "one missing", after: `foresight_requests_total{code="200"} 12` + "\n" + `foresight_requests_total{code="502"} 1` + "\n",
			sent: 10, counted: 9, byCode: map[string]int{"200": 9}},
		// The client saw a 200 whose stream broke (wrong); the router counted it 502, as it should.
		{name: "a failure the router counted", after: `foresight_requests_total{code="200"} 5` + "\n" + `foresight_requests_total{code="502"} 2` + "\n",
			sent: 3, clientFailed: 1, counted: 3, countedBad: 1, byCode: map[string]int{"200": 2, "502": 1}, ok: true},
		// A wrong answer the router counted as a success.
		{name: "a failure the router missed", after: `foresight_requests_total{code="200"} 6` + "\n" + `foresight_requests_total{code="502"} 1` + "\n",
			sent: 3, clientFailed: 1, counted: 3, byCode: map[string]int{"200": 3}},
		// The router had counted nothing before: no series yet.
		{name: "a new code", after: `foresight_requests_total{code="200"} 3` + "\n" + `foresight_requests_total{code="502"} 1` + "\n" +
			`foresight_requests_total{code="504"} 2` + "\n", sent: 2, clientFailed: 2, counted: 2, countedBad: 2, byCode: map[string]int{"504": 2}, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := account(before, families(t, tt.after), tt.sent, tt.clientFailed)
			if a.Sent != tt.sent || a.Counted != tt.counted || a.ClientFailed != tt.clientFailed || a.CountedFailed != tt.countedBad ||
				a.OK != tt.ok || !maps.Equal(a.ByCode, tt.byCode) {
				t.Errorf("%+v, want counted %d (failed %d) by code %v, ok %v", a, tt.counted, tt.countedBad, tt.byCode, tt.ok)
			}
		})
	}
}

// The result counts the outcomes, lists every request without a correct answer with its id and
// error, and fails the verdict for each kind of problem; the text says so.
func TestResultAndVerdict(t *testing.T) {
	ms := time.Millisecond
	l := newLoad("http://127.0.0.1:1", 1, 4, nil)
	for n := range 6 {
		l.record(outcome{call: newCall(1, n, 4), at: time.Duration(n) * 100 * ms, status: 200, ttft: time.Duration(10+n) * ms, e2e: 50 * ms})
	}
	l.record(outcome{call: newCall(1, 6, 4), at: 600 * ms, problem: "transport: connection reset by peer"})
	l.record(outcome{call: newCall(1, 7, 4), at: 700 * ms, status: 200, problem: "the stream ended without data: [DONE]"})
	l.record(outcome{call: newCall(1, 8, 4), at: 800 * ms, status: 503, problem: "status 503: no endpoint"})
	l.record(outcome{call: newCall(1, 9, 4), at: 900 * ms, problem: "not sent: 2000 requests in flight", skipped: true})
	res := l.result(9, 3*time.Second)
	res.faults([]chaos.Event{{Kind: "kill", OK: true}, {Kind: "kill", OK: false, Detail: "picker did not serve again"}, {Kind: "swap", OK: true}},
		[]float64{150, 170.5}, nil)
	res.Accounting = Accounting{Sent: 9, Counted: 8, ClientFailed: 3, CountedFailed: 2, ByCode: map[string]int{"200": 6, "502": 1, "503": 1}}
	res.verdict()

	if res.Requests != 10 || res.Sent != 9 || res.OK != 6 || res.Lost != 1 || res.Wrong != 2 || res.Skipped != 1 ||
		res.ByStatus["200"] != 7 || res.ByStatus["503"] != 1 || res.ByStatus["none"] != 1 || res.RateAchieved != 3 {
		t.Errorf("counts %+v", res)
	}
	if res.Kills != 1 || res.KillFailures != 1 || res.Swaps != 1 || res.MaxRestartMs != 170.5 {
		t.Errorf("faults: %d kills (%d failed), %d swaps, max restart %v", res.Kills, res.KillFailures, res.Swaps, res.MaxRestartMs)
	}
	if len(res.Failures) != 4 || res.Failures[0].ID != "soak-1-6" || res.Failures[0].Kind != "lost" ||
		res.Failures[1].Kind != "wrong" || res.Failures[1].Status != 200 || res.Failures[3].Kind != "skipped" {
		t.Errorf("failures %+v", res.Failures)
	}
	wantProblems := []string{"1 requests lost", "2 requests answered wrong", "1 requests not sent", "1 kills failed",
		"the router counted 8 requests in foresight_requests_total, the load sent 9", "the router counted 2 failed requests, the load saw 3"}
	if res.Pass || strings.Join(res.Problems, "|") != strings.Join(wantProblems, "|") {
		t.Errorf("pass %v, problems %q", res.Pass, res.Problems)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"lost soak-1-6 at 600 ms: transport: connection reset by peer",
		"wrong soak-1-7 at 700 ms: the stream ended without data: [DONE]", "failed kill at 0 ms: picker did not serve again",
		"verdict: FAIL: 1 requests lost"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the text lacks %q:\n%s", s, b.String())
		}
	}

	// Nothing wrong: the verdict passes, and the JSON has lists, not nulls.
	ok := newLoad("http://127.0.0.1:1", 1, 4, nil).result(0, time.Second)
	ok.verdict()
	j, err := json.Marshal(ok)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"pass":true`, `"problems":[]`, `"failures":[]`, `"faults":[]`} {
		if !strings.Contains(string(j), s) {
			t.Errorf("%s lacks %s", j, s)
		}
	}
}

// A 429 or 503 of flow control, with its reason in both headers and an OpenAI error, is a request
// shed with a reason: neither lost nor wrong, counted by reason, and the router's count of
// non-200 answers must include it. Any other 429 or 503 is wrong.
func TestShedWithAReason(t *testing.T) {
	answer := func(status int, reason, alias, body string) *http.Response {
		h := http.Header{}
		if reason != "" {
			h.Set("x-foresight-dropped-reason", reason)
		}
		if alias != "" {
			h.Set("x-llm-d-request-dropped-reason", alias)
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
	}
	openAI := `{"error":{"message":"waited its TTL","type":"rate_limit_exceeded","code":"ttl_expired"}}`
	for _, tt := range []struct {
		name string
		resp *http.Response
		want string
	}{
		{"429 ttl-expired", answer(429, "ttl-expired", "ttl-expired", openAI), "ttl-expired"},
		{"503 no-endpoints", answer(503, "no-endpoints", "no-endpoints", openAI), "no-endpoints"},
		{"no reason header", answer(429, "", "", openAI), ""},
		{"the alias differs", answer(429, "ttl-expired", "band-full", openAI), ""},
		{"not OpenAI's shape", answer(429, "ttl-expired", "ttl-expired", "busy"), ""},
		{"a 500", answer(500, "ttl-expired", "ttl-expired", openAI), ""},
	} {
		body, _ := io.ReadAll(tt.resp.Body)
		if got := droppedReason(tt.resp, body); got != tt.want {
			t.Errorf("%s: reason %q, want %q", tt.name, got, tt.want)
		}
	}
	l := newLoad("http://127.0.0.1:1", 1, 4, nil)
	l.record(outcome{call: newCall(1, 0, 4), status: 200, ttft: time.Millisecond, e2e: time.Millisecond})
	l.record(outcome{call: newCall(1, 1, 4), status: 429, dropped: "ttl-expired"})
	l.record(outcome{call: newCall(1, 2, 4), status: 429, dropped: "band-full"})
	res := l.result(3, time.Second)
	res.Accounting = Accounting{Sent: 3, Counted: 3, ClientFailed: 2, CountedFailed: 2, ByCode: map[string]int{"200": 1, "429": 2}}
	res.verdict()
	if res.OK != 1 || res.Shed != 2 || res.ShedByReason["ttl-expired"] != 1 || res.ShedByReason["band-full"] != 1 || res.Wrong != 0 || !res.Pass {
		t.Errorf("ok %d, shed %d %v, wrong %d, pass %t %q", res.OK, res.Shed, res.ShedByReason, res.Wrong, res.Pass, res.Problems)
	}
}

// A stream the router ends with an error event is cut, not wrong: counted by code, a failure the
// router must count too, and the verdict wants as many as the truncator cut after a first event.
// A stream that ends with neither [DONE] nor an error event is a silent truncation, which fails
// it; so do a stop the router did not recover from and a drain with a request cut silently or
// lost, or a router the bench had to kill.
func TestCutsStopsAndDrain(t *testing.T) {
	l := newLoad("http://127.0.0.1:1", 1, 4, nil)
	l.record(outcome{call: newCall(1, 0, 4), status: 200, ttft: time.Millisecond, e2e: time.Millisecond})
	l.record(outcome{call: newCall(1, 1, 4), status: 200, cut: "upstream_stream_broken"})
	l.record(outcome{call: newCall(1, 2, 4), status: 200, cut: "upstream_stream_broken"})
	l.record(outcome{call: newCall(1, 3, 4), status: 200, silent: true, problem: "the stream ended without data: [DONE] and without an error event"})
	res := l.result(4, time.Second)
	res.faults([]chaos.Event{{Kind: "stop", OK: true}, {Kind: "stop", Detail: "scorer (pid 7) did not serve again with a new pid within 30s"}},
		nil, []float64{2150.5})
	res.Truncated = &chaos.TruncatedCounts{Streams: 9, CutBeforeFirst: 1, CutAfterFirst: 3}
	res.Drain = &DrainResult{GraceSeconds: 2, Streams: 4, Whole: 1, Completed: 2, Cut: 2, Refused: 0, Silent: 1, ExitCode: -1,
		Failures: []Failure{{ID: "soak-1-drain-0", Kind: "silent", Error: "the stream ended without data: [DONE] and without an error event"}}}
	res.Accounting = Accounting{Sent: 4, Counted: 4, ClientFailed: 2, CountedFailed: 2, ByCode: map[string]int{"200": 2, "502": 2}}
	res.verdict()
	if res.OK != 1 || res.Cut != 2 || res.CutByCode["upstream_stream_broken"] != 2 || res.Wrong != 1 || res.SilentTruncations != 1 {
		t.Errorf("ok %d, cut %d %v, wrong %d, silent %d", res.OK, res.Cut, res.CutByCode, res.Wrong, res.SilentTruncations)
	}
	if res.Stops != 1 || res.StopFailures != 1 || res.MaxRecoverMs != 2150.5 || res.MaxRestartMs != 0 {
		t.Errorf("stops %d (%d failed), max recovery %v ms, max restart %v ms", res.Stops, res.StopFailures, res.MaxRecoverMs, res.MaxRestartMs)
	}
	wantProblems := []string{"1 requests answered wrong", "1 streams truncated silently (no data: [DONE], no error event)",
		"1 frozen plugins not killed and restarted",
		"2 streams reached the client cut with an error event; the servers cut 3 after their first event",
		"at the SIGTERM 1 requests in flight ended silently cut, without an answer or wrong",
		"the router had not exited 10s after its 2s grace; the bench killed it"}
	if res.Pass || strings.Join(res.Problems, "|") != strings.Join(wantProblems, "|") {
		t.Errorf("pass %v, problems %q", res.Pass, res.Problems)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"2 cut with an error event", "1 wrong (1 truncated silently)", "cut by code: upstream_stream_broken 2",
		"truncator in front of the first server: 9 streams relayed, 1 cut before their first event, 3 after",
		"1 stops (1 failed, max recovery 2150.5 ms)",
		"SIGTERM with 4 streams and 1 whole requests in flight (grace 2.0 s): 2 completed, 2 cut with an error event, 0 refused with an error, 1 silently cut, 0 lost, 0 wrong",
		"silent soak-1-drain-0: the stream ended without data: [DONE]"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the text lacks %q:\n%s", s, b.String())
		}
	}

	// The cuts match the truncator's, the drain ended well: a pass.
	res.Truncated.CutAfterFirst = 2
	res.Drain = &DrainResult{GraceSeconds: 2, Streams: 4, Completed: 2, Cut: 2, ExitCode: 0}
	res.faults([]chaos.Event{{Kind: "stop", OK: true}}, nil, []float64{2000})
	l2 := *res
	l2.Wrong, l2.SilentTruncations = 0, 0
	l2.verdict()
	if !l2.Pass {
		t.Errorf("problems %q, want a pass", l2.Problems)
	}
}
