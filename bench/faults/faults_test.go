package faults

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/bench/chaos"
)

func TestFaultResultJSON(t *testing.T) {
	l := newLoad("http://127.0.0.1:1", 10*time.Second)
	ms := time.Millisecond
	for i := range 100 {
		l.record(requestOutcome{at: time.Duration(i) * 100 * ms, ttft: time.Duration(10+i) * ms}) // baseline
		l.record(requestOutcome{at: 10*time.Second + time.Duration(i)*300*ms, ttft: time.Duration(20+i) * ms})
	}
	l.record(requestOutcome{at: 5 * time.Second, reason: "status 503: no endpoint"})
	l.record(requestOutcome{at: 15 * time.Second, reason: "status 503: no endpoint"})
	l.record(requestOutcome{at: 16 * time.Second, reason: "not sent: 2000 requests in flight"})
	l.sent = 202
	res := l.result(10*time.Second, 40*time.Second)
	tally(res, []chaos.Event{
		{Kind: "swap", OK: true}, {Kind: "swap", OK: false}, {Kind: "swap", OK: true},
		{Kind: "kill", OK: true}, {Kind: "kill", OK: true},
		{Kind: "bad-reload", OK: true}, {Kind: "bad-reload", OK: false},
	}, []float64{120.5, 340.25})

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"requests": 203, "failed": 3, "swaps": 2, "kills": 2, "bad_reloads_rejected": 1,
		// 100 TTFTs per window, 10..109 ms and 20..119 ms: the p99 sits at rank 0.99·(100−1) = 98.01,
		// between the 99th and the 100th, 108 + 0.01·(109 − 108) = 108.01 and 118 + 0.01 = 118.01
		// (nearest rank, before internal/quantile, gave the 99th: 108 and 118).
		"max_restart_ms": 340.25, "p99_ttft_ms_during_faults": 118.01, "p99_ttft_ms_baseline": 108.01,
		"requests_baseline": 101, "failed_baseline": 1, "requests_during_faults": 102, "failed_during_faults": 2,
		"swap_failures": 1, "kill_failures": 0, "bad_reload_failures": 1, "rate_achieved": 5.1,
	}
	for k, v := range want {
		if g, ok := got[k].(float64); !ok || g != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	failures, _ := got["failures"].(map[string]any)
	if len(failures) != 2 || failures["status 503: no endpoint"] != 2.0 || failures["not sent: 2000 requests in flight"] != 1.0 {
		t.Errorf("failures %v", got["failures"])
	}
	if r, _ := got["restart_ms"].([]any); len(r) != 2 {
		t.Errorf("restart_ms %v", got["restart_ms"])
	}
	if s, _ := got["failure_samples"].([]any); len(s) != 3 {
		t.Errorf("failure_samples %v", got["failure_samples"])
	}

	// No request in a window: percentiles are 0, not a panic; the lists are [] rather than null.
	empty := newLoad("http://127.0.0.1:1", 0).result(0, time.Second)
	tally(empty, nil, nil)
	b, _ = json.Marshal(empty)
	for _, s := range []string{`"p99_ttft_ms_baseline":0`, `"restart_ms":[]`, `"faults":[]`, `"failures":{}`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("%s lacks %s", b, s)
		}
	}
}
