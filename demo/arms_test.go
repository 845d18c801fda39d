package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/experiment"
)

// abReport is an experiment of two arms on the profiles: predicted-latency meets 4.5 points more
// SLOs than the baseline (interval [1.25, 7.75], significant) and its TTFT median is 0.5 ms lower
// (interval [−1.5, 0.5], not significant), its TTFT p95 10 ms lower (interval [−14, −6],
// significant).
func abReport() *experiment.Report {
	return &experiment.Report{Slot: "profiles", Arms: []experiment.ArmReport{
		{Name: "load-prefix-322", Requests: 1200, TTFTp50Ms: 16.25, TTFTp95Ms: 41, TPOTp50Ms: 9.375, TPOTp95Ms: 10.125, WithSLO: 1200, SLOAttainment: 0.875},
		{Name: "predicted-latency", Requests: 1100, TTFTp50Ms: 15.75, TTFTp95Ms: 31, TPOTp50Ms: 9.375, TPOTp95Ms: 10.125, WithSLO: 1100, SLOAttainment: 0.92,
			VsBaseline: &experiment.Comparison{Baseline: "load-prefix-322",
				SLOAttainmentDiff: experiment.Interval{Estimate: 0.045, Low: 0.0125, High: 0.0775, Significant: true},
				TTFTp50DiffMs:     experiment.Interval{Estimate: -0.5, Low: -1.5, High: 0.5},
				TTFTp95DiffMs:     experiment.Interval{Estimate: -10, Low: -14, High: -6, Significant: true}}},
	}}
}

func TestRenderArms(t *testing.T) {
	arms := renderArms(abReport())
	for _, want := range []string{
		"A/B experiment on profiles, split by session",
		"16.2 / 41.0", "9.38 / 10.1", "87.5% of 1200", // the baseline's row
		"92.0% of 1100", // 0.045 → 4.5 points:
		"\n  vs baseline (95%): SLO +4.5 pt [+1.2, +7.8]  TTFT p50 -0.50 ms [-1.50, +0.50]  p95 -10.00 ms [-14.00, -6.00]\n",
	} {
		if !strings.Contains(arms, want) {
			t.Errorf("arms lack %q:\n%s", want, arms)
		}
	}
	f := fleet()
	f.experiment = abReport()
	if screen := renderScreen(snapshot(), f, time.Minute); !strings.Contains(screen, arms) {
		t.Errorf("the screen lacks the arms:\n%s", screen)
	}
	if renderArms(nil) != "" || verdict(nil) != "" {
		t.Error("no experiment, yet arms or a verdict")
	}
	// The summary ends with the verdict: SLO attainment higher (significant), the TTFT median no
	// different, its 95th percentile lower (significant); then what its attainments count.
	sum := renderSummary(runInfo{scenario: "production", servers: 4, duration: time.Minute}, snapshot(), f, 65*time.Second, false)
	want := "  verdict       predicted-latency against load-prefix-322, at 95%:\n" +
		"                SLO attainment higher: +4.5 pt [+1.2, +7.8]\n" +
		"                TTFT p50 no different: -0.50 ms [-1.50, +0.50]\n" +
		"                TTFT p95 lower: -10.00 ms [-14.00, -6.00]\n\n" + clientAttainmentNote + armAttainmentNote
	if !strings.HasSuffix(sum, want) {
		t.Errorf("summary does not end with the verdict and the notes %q:\n%s", want, sum)
	}
	if line := renderLine(snapshot(), f); !strings.Contains(line, "\n  load-prefix-322 slo**=87.5% ttft=16.2/41.0 | predicted-latency slo**=92.0%") {
		t.Errorf("the compact lines lack the arms: %s", line)
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name string
		d    experiment.Interval
		want string
	}{
		{"too few", experiment.Interval{Insufficient: true, Reason: "needs 30 per arm"}, "x not compared (needs 30 per arm)"},
		{"0 inside", experiment.Interval{Estimate: 0.01, Low: -0.02, High: 0.04}, "x no different: +1.0 pt [-2.0, +4.0]"},
		{"above 0", experiment.Interval{Estimate: 0.03, Low: 0.01, High: 0.05, Significant: true}, "x up: +3.0 pt [+1.0, +5.0]"},
		{"below 0", experiment.Interval{Estimate: -0.03, Low: -0.05, High: -0.01, Significant: true}, "x down: -3.0 pt [-5.0, -1.0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judge("x", tt.d, pointsInterval, "up", "down"); got != tt.want {
				t.Errorf("judge = %q, want %q", got, tt.want)
			}
		})
	}
}
