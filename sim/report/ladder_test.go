package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/stats"
)

// The ladder page lists every strategy at every load, charts TTFT p50 and p99 against load (and
// SLO attainment when requests had objectives), escapes the input and depends only on it.
func TestWriteLadder(t *testing.T) {
	sum := func(base time.Duration, slo float64) *stats.Summary {
		s := stats.Summarize(synthetic(200, base, 0, false))
		if slo > 0 {
			s.SLOAttainment = &slo
		}
		return &s
	}
	in := LadderInput{Title: "ladder <C>", Note: "saturation 10 req/s & more", Loads: []float64{0.5, 0.95, 0.7},
		Strategies: []LadderStrategy{
			{Name: "rr", Summaries: []*stats.Summary{sum(20*time.Millisecond, 0.9), sum(400*time.Millisecond, 0.5), sum(60*time.Millisecond, 0.8)}},
			{Name: "predicted-latency", Summaries: []*stats.Summary{nil, nil, nil}},
			{Name: "oracle", Summaries: []*stats.Summary{sum(10*time.Millisecond, 1), sum(50*time.Millisecond, 0.9), sum(20*time.Millisecond, 0.95)}},
		}}
	var a, b bytes.Buffer
	if err := WriteLadder(&a, in); err != nil {
		t.Fatal(err)
	}
	if err := WriteLadder(&b, in); err != nil || a.String() != b.String() {
		t.Fatalf("two renderings differ (%v)", err)
	}
	page := a.String()
	for _, s := range []string{"ladder &lt;C&gt;", "saturation 10 req/s &amp; more", "load 0.95", "TTFT p50 against load",
		"TTFT p99 against load", "SLO attainment against load", "predicted-latency", "not run"} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	if n := strings.Count(page, "<svg"); n != 3 {
		t.Errorf("%d charts, want 3", n)
	}
	in.Strategies[0].Summaries = []*stats.Summary{sum(20*time.Millisecond, 0), sum(30*time.Millisecond, 0), sum(40*time.Millisecond, 0)}
	in.Strategies[2].Summaries = in.Strategies[0].Summaries
	a.Reset()
	if err := WriteLadder(&a, in); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(a.String(), "<svg"); n != 2 || strings.Contains(a.String(), "SLO attainment against load") {
		t.Errorf("without SLOs: %d charts, want the 2 TTFT ones", n)
	}
}
