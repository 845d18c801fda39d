package demo

import (
	"fmt"
	"strings"

	"github.com/foresight-router/foresight/host/experiment"
)

// The experiment's part of the view: the router's own report (GET /admin/experiments, the
// same figures and intervals), read in process every second. Its figures come from each arm's
// window of recent outcomes (experiment.DefaultWindow, more than a demo sends).

// renderArms is one row per arm: TTFT and TPOT p50/p95 and SLO attainment; below every arm but
// the baseline (the first), the 95% intervals of its differences from the baseline.
func renderArms(rep *experiment.Report) string {
	if rep == nil || len(rep.Arms) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A/B experiment on %s, split by session (the router's /admin/experiments)\n", rep.Slot)
	fmt.Fprintf(&b, "%-18s %8s %18s %16s %20s\n", "ARM", "REQUESTS", "TTFT p50/p95 ms", "TPOT p50/p95 ms", "SLO ATTAINMENT**")
	for _, a := range rep.Arms {
		slo := "-"
		if a.WithSLO > 0 {
			slo = fmt.Sprintf("%.1f%% of %d", 100*a.SLOAttainment, a.WithSLO)
		}
		fmt.Fprintf(&b, "%-18s %8d %18s %16s %20s\n", a.Name, a.Requests, pair(a.TTFTp50Ms, a.TTFTp95Ms),
			pair(a.TPOTp50Ms, a.TPOTp95Ms), slo)
		if c := a.VsBaseline; c != nil {
			b.WriteString(clip(fmt.Sprintf("  vs baseline (95%%): SLO %s  TTFT p50 %s  p95 %s",
				pointsInterval(c.SLOAttainmentDiff), msInterval(c.TTFTp50DiffMs), msInterval(c.TTFTp95DiffMs)), lineWidth) + "\n")
		}
	}
	return b.String()
}

// verdict says, for every arm against the baseline, whether its SLO attainment differs and by
// how much, with the 95% interval; and the same for the TTFT median and 95th percentile.
func verdict(rep *experiment.Report) string {
	if rep == nil || len(rep.Arms) < 2 {
		return ""
	}
	var b strings.Builder
	base := rep.Arms[0].Name
	for _, a := range rep.Arms[1:] {
		c := a.VsBaseline
		if c == nil {
			continue
		}
		fmt.Fprintf(&b, "  verdict       %s against %s, at 95%%:\n", a.Name, base)
		for _, j := range []string{
			judge("SLO attainment", c.SLOAttainmentDiff, pointsInterval, "higher", "lower"),
			judge("TTFT p50", c.TTFTp50DiffMs, msInterval, "higher", "lower"),
			judge("TTFT p95", c.TTFTp95DiffMs, msInterval, "higher", "lower"),
		} {
			fmt.Fprintf(&b, "                %s\n", j)
		}
	}
	return b.String()
}

// judge words one difference: significant when its interval excludes 0.
func judge(what string, d experiment.Interval, format func(experiment.Interval) string, up, down string) string {
	switch {
	case d.Insufficient:
		return fmt.Sprintf("%s not compared (%s)", what, d.Reason)
	case !d.Significant:
		return fmt.Sprintf("%s no different: %s", what, format(d))
	case d.Estimate > 0:
		return fmt.Sprintf("%s %s: %s", what, up, format(d))
	}
	return fmt.Sprintf("%s %s: %s", what, down, format(d))
}

// pointsInterval is an attainment difference in percentage points: "+4.1 pt [+1.0, +7.2]".
func pointsInterval(d experiment.Interval) string {
	if d.Insufficient {
		return "-"
	}
	return fmt.Sprintf("%+.1f pt [%+.1f, %+.1f]", 100*d.Estimate, 100*d.Low, 100*d.High)
}

// msInterval is a latency difference in milliseconds: "-3.20 ms [-5.10, -1.30]".
func msInterval(d experiment.Interval) string {
	if d.Insufficient {
		return "-"
	}
	return fmt.Sprintf("%+.2f ms [%+.2f, %+.2f]", d.Estimate, d.Low, d.High)
}

// pair is "p50 / p95"; "-" when nothing was observed (the report's 0).
func pair(p50, p95 float64) string {
	if p50 == 0 && p95 == 0 {
		return "-"
	}
	return msString(p50) + " / " + msString(p95)
}
