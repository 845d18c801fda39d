package demo

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/foresight-router/foresight/sim/loadgen"
)

// The compact view, for a log or a pipe: a few lines every compactEvery, each within lineWidth.

// renderLine is the compact view for a log or a pipe, every 5 s: the run's line, the fleet's and,
// in an experiment, the arms', each within lineWidth.
func renderLine(s loadgen.Snapshot, f fleetState) string {
	lines := []string{
		fmt.Sprintf("t=%s sent=%d inflight=%d ok=%d shed=%d err=%d ttft=%s tpot=%s slo*=%s",
			s.Elapsed.Round(time.Second), s.Dispatched, s.InFlight, s.Run.Count(loadgen.OK), s.Run.Count(loadgen.Shed),
			s.Run.Errors(), compactPair(s.Recent.TTFT), compactPair(s.Recent.TPOT), compactAttainment(&s.Recent)),
		"  " + loadList(f.endpoints) + " " + compactPredictor(f.predictor),
	}
	if rep := f.experiment; rep != nil {
		arms := make([]string, len(rep.Arms))
		for i, a := range rep.Arms {
			slo := "-"
			if a.WithSLO > 0 {
				slo = fmt.Sprintf("%.1f%%", 100*a.SLOAttainment)
			}
			arms[i] = fmt.Sprintf("%s slo**=%s ttft=%s", a.Name, slo, strings.ReplaceAll(pair(a.TTFTp50Ms, a.TTFTp95Ms), " ", ""))
		}
		lines = append(lines, "  "+strings.Join(arms, " | "))
	}
	for i, l := range lines {
		lines[i] = clip(l, lineWidth)
	}
	return strings.Join(lines, "\n")
}

// loadList is the endpoints' running+waiting requests, one by one up to maxLoadList endpoints,
// else their range.
func loadList(eps []endpointLoad) string {
	if len(eps) <= maxLoadList {
		load := make([]string, len(eps))
		for i, e := range eps {
			load[i] = "?"
			if e.ok {
				load[i] = fmt.Sprintf("%.0f+%.0f", e.running, e.waiting)
			}
		}
		return "load(run+wait)=" + strings.Join(load, ",")
	}
	lo, hi, unknown := math.Inf(1), math.Inf(-1), 0
	for _, e := range eps {
		if !e.ok {
			unknown++
			continue
		}
		lo, hi = min(lo, e.running+e.waiting), max(hi, e.running+e.waiting)
	}
	if unknown == len(eps) {
		return fmt.Sprintf("load(run+wait)=? on all %d", len(eps))
	}
	return fmt.Sprintf("load(run+wait)=%.0f..%.0f over %d (%d unknown)", lo, hi, len(eps), unknown)
}

// compactPredictor is the producer's model and rolling error for a compact line.
func compactPredictor(p predictorState) string {
	switch {
	case !p.ok:
		return "model=?"
	case !p.producer:
		return "model=none"
	case p.version == 0:
		return "model=learning"
	}
	return fmt.Sprintf("model=v%.0f mape(ttft/tpot)=%s/%s", p.version, percent(p.mapeTTFT), percent(p.mapeTPOT))
}

// compactPair is "p50/p95ms", "-" before any value.
func compactPair(p loadgen.Percentiles) string {
	if p.N == 0 {
		return "-"
	}
	return msString(p.P50) + "/" + msString(p.P95) + "ms"
}

// compactAttainment is "93.7%(1200/1281)", "-" without objectives.
func compactAttainment(s *loadgen.Summary) string {
	a, ok := s.Attainment()
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f%%(%d/%d)", 100*a, s.MetSLO, s.WithSLO)
}
