package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRequestsCountsAndViolations(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewRequests(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Observe(Request{Code: 200, TTFTMs: 120, TPOTMs: 30, PredictedTTFTMs: 100, PredictedTPOTMs: 25, SLOTTFTMs: 100, SLOTPOTMs: 50})
	m.Observe(Request{Code: 200, TTFTMs: 80, SLOTTFTMs: 100})
	m.Observe(Request{Code: 429})
	want := `
# HELP foresight_requests_total Requests answered, by HTTP status code (499: the client went away first).
# TYPE foresight_requests_total counter
foresight_requests_total{code="200"} 2
foresight_requests_total{code="429"} 1
# HELP llm_d_epp_request_slo_violation_total Requests that missed an objective, by type (ttft, tpot).
# TYPE llm_d_epp_request_slo_violation_total counter
llm_d_epp_request_slo_violation_total{type="ttft"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foresight_requests_total", "llm_d_epp_request_slo_violation_total"); err != nil {
		t.Error(err)
	}
	m.Decided("default", "picked")
	m.Decided("slo", "picked")
	m.Decided("slo", "no candidates")
	want = `
# HELP foresight_decisions_total Requests decided, by the scheduling profile that decided them and outcome (picked, rejected, no_candidates).
# TYPE foresight_decisions_total counter
foresight_decisions_total{outcome="no_candidates",profile="slo"} 1
foresight_decisions_total{outcome="picked",profile="default"} 1
foresight_decisions_total{outcome="picked",profile="slo"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foresight_decisions_total"); err != nil {
		t.Error(err)
	}
	m.ObserveDecisionWait(3 * time.Millisecond)
	if n := testutil.CollectAndCount(m.decisionWait); n != 1 {
		t.Errorf("%d decision-wait histograms", n)
	}
	if n := testutil.CollectAndCount(m.ttft); n != 1 {
		t.Errorf("%d TTFT histograms", n)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRequests(reg); err == nil {
		t.Error("registering the request metrics twice succeeded")
	}
}
