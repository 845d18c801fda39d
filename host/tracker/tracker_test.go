package tracker

import (
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func state(t *Tracker, ep string) sdk.EndpointState {
	var s sdk.EndpointState
	t.Fill(ep, &s)
	return s
}

func TestLifecycle(t *testing.T) {
	tr := New()
	tr.Dispatch("a", Request{ID: "r1", PrefillTokens: 1000, OutputTokens: 100, TPOTSLOMs: 50})
	tr.Dispatch("a", Request{ID: "r2", PrefillTokens: 300, OutputTokens: 20}) // no SLO: masks nobody
	tr.Dispatch("a", Request{ID: "r2", PrefillTokens: 999})                   // duplicate: ignored
	steps := []struct {
		name string
		do   func()
		want sdk.EndpointState
	}{
		{"two dispatched", func() {},
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 1300, MinRunningTPOTSLOMs: 50}},
		{"r1 first token: its 1000 prompt tokens leave, 100 − 1 outputs remain", func() { tr.FirstToken("a", "r1") },
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 300, DecodeTokensInFlight: 99, MinRunningTPOTSLOMs: 50}},
		{"r1 at 40 tokens: 60 remain", func() { tr.Tokens("a", "r1", 40) },
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 300, DecodeTokensInFlight: 60, MinRunningTPOTSLOMs: 50}},
		{"stale token count ignored", func() { tr.Tokens("a", "r1", 10) },
			sdk.EndpointState{InflightRequests: 2, PrefillTokensInFlight: 300, DecodeTokensInFlight: 60, MinRunningTPOTSLOMs: 50}},
		{"r1 finishes: its SLO no longer applies", func() { tr.Finish("a", "r1") },
			sdk.EndpointState{InflightRequests: 1, PrefillTokensInFlight: 300}},
		{"r2 fails before its first token", func() { tr.Finish("a", "r2") }, sdk.EndpointState{}},
		{"unknown ids and endpoints are ignored", func() {
			tr.FirstToken("a", "nope")
			tr.Tokens("b", "r1", 5)
			tr.Finish("c", "r9")
		}, sdk.EndpointState{}},
	}
	for _, st := range steps {
		st.do()
		if got := state(tr, "a"); got != st.want {
			t.Fatalf("%s: state %+v, want %+v", st.name, got, st.want)
		}
	}
}

func TestFillLeavesEngineFieldsAlone(t *testing.T) {
	tr := New()
	tr.Dispatch("a", Request{ID: "r", PrefillTokens: 10, OutputTokens: 5})
	s := sdk.EndpointState{KVCacheUsage: 0.4, Waiting: 3, Running: 7, PrefixMatch: 0.5, MetricsAgeMs: 20}
	tr.Fill("a", &s)
	want := sdk.EndpointState{KVCacheUsage: 0.4, Waiting: 3, Running: 7, PrefixMatch: 0.5, MetricsAgeMs: 20,
		InflightRequests: 1, PrefillTokensInFlight: 10}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
}
