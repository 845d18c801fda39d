package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/workload"
)

// Each server's latencies, SLO attainment and prediction errors: through a router from its
// access lines' endpoints, without one from the client's targets.
func TestServerLatencies(t *testing.T) {
	msd := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	slo := workload.SLO{TTFTMs: 1000, TPOTMs: 25}
	results := []loadgen.Result{
		{RequestID: "r1", Kind: loadgen.OK, SLO: slo, Streamed: true, TTFT: msd(102), TPOT: msd(21)},            // met
		{RequestID: "r2", Kind: loadgen.OK, SLO: slo, Streamed: true, TTFT: msd(204), TPOT: msd(31), Target: 1}, // TPOT missed
		{RequestID: "r3", Kind: loadgen.OK, SLO: slo, Streamed: true, TTFT: msd(50), TPOT: msd(10), Target: 1},
		{RequestID: "r4", Kind: loadgen.Cut, SLO: slo, Streamed: true},                            // cut: not counted
		{RequestID: "r5", Kind: loadgen.OK, SLO: slo, Streamed: true, TTFT: msd(9), TPOT: msd(9)}, // an endpoint not in the run
		{RequestID: "r6", Kind: loadgen.ServerError, SLO: slo, Streamed: true, Target: 1},         // failed before a token
	}
	a := newAccessLog()
	lines := `{"request_id":"r1","endpoint":"a0","ttft_ms":100,"tpot_ms":20,"predicted_ttft_ms":110,"predicted_tpot_ms":25,"message":"request"}
{"request_id":"r2","endpoint":"a0","ttft_ms":200,"tpot_ms":30,"predicted_ttft_ms":180,"predicted_tpot_ms":24,"message":"request"}
{"request_id":"r3","endpoint":"a1","ttft_ms":50,"tpot_ms":10,"message":"request"}
{"request_id":"r4","endpoint":"a1","message":"request"}
{"request_id":"r5","endpoint":"elsewhere","ttft_ms":8,"tpot_ms":8,"message":"request"}
{"request_id":"r6","endpoint":"a1","message":"request"}
`
	if _, err := a.Write([]byte(lines)); err != nil {
		t.Fatal(err)
	}
	addrs := []string{"a0", "a1"}
	run := LiveRun{Name: "router"}
	run.servers(addrs, results, routerFigures{dispatched: map[string]float64{"a0": 2, "a1": 2}}, a, []float64{0, 0}, []float64{0, 0})
	s0, s1 := run.ServerStats[0], run.ServerStats[1]
	// a0: r1 and r2. TTFT p50 (102 + 204) / 2, TPOT (21 + 31) / 2, one of two met; predicted over
	// measured TTFT 1.1 and 0.9 (p50 1.0, MAPE 10 %), TPOT 1.25 and 0.8 (p50 1.025, MAPE 22.5 %).
	if *s0.TTFTP50Ms != 153 || *s0.TPOTP50Ms != 26 || *s0.SLOAttainment != 0.5 {
		t.Errorf("a0: TTFT %v TPOT %v attainment %v; want 153, 26, 0.5", *s0.TTFTP50Ms, *s0.TPOTP50Ms, *s0.SLOAttainment)
	}
	if p := s0.TTFTPredicted; p == nil || p.Requests != 2 || !near(p.RatioP50, 1) || !near(p.MAPE, 0.1) {
		t.Errorf("a0 TTFT predicted %+v, want 2 requests, ratio 1, MAPE 0.1", p)
	}
	if p := s0.TPOTPredicted; p == nil || !near(p.RatioP50, 1.025) || !near(p.MAPE, 0.225) {
		t.Errorf("a0 TPOT predicted %+v, want ratio 1.025, MAPE 0.225", p)
	}
	// a1: r3 (met), the cut r4 and r6, which failed (a miss); no prediction there.
	if *s1.TTFTP50Ms != 50 || *s1.SLOAttainment != 0.5 || s1.TTFTPredicted != nil || s1.TPOTPredicted != nil {
		t.Errorf("a1: %+v; want TTFT 50, attainment 0.5, no prediction errors", s1)
	}
	var b strings.Builder
	writeServerTable(&b, []LiveRun{run})
	if !strings.Contains(b.String(), "153/50") || !strings.Contains(b.String(), "0.50/0.50") || !strings.Contains(b.String(), "1.00/-") {
		t.Errorf("table:\n%s", b.String())
	}

	// Without a router the client's targets say where each went: r1, r5 and the cut r4 on 0.
	client := LiveRun{Name: "client"}
	client.servers(addrs, results, routerFigures{}, nil, []float64{0, 0}, []float64{0, 0})
	if c0 := client.ServerStats[0]; c0.Requests != 3 || *c0.TTFTP50Ms != 55.5 || *c0.SLOAttainment != 1 || c0.TPOTPredicted != nil {
		t.Errorf("client's server 0: %+v; want 3 requests, TTFT p50 55.5, attainment 1", c0)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
