package bench

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/foresight-router/foresight/sim/report"
)

// WriteTable prints the ladder: the saturation rate, then each load's routing table headed by
// its load, with the predictor's and the oracle's difference from the best heuristic, then the
// summary across loads (latencies in ms).
func (l *LadderResult) WriteTable(out io.Writer) {
	fmt.Fprintf(out, "\n%s\n", l.saturationLine())
	for i, r := range l.Loads {
		r.Result.writeTable(out, fmt.Sprintf("load %.2f (%.2f req/s fleet, %.2f per server)", r.Load, r.RateFleet, r.RatePerServer))
		writeHeadroom(out, l.Summary[i])
	}
	l.writeSummary(out)
}

// saturationLine says what the saturation rate is and how it was found.
func (l *LadderResult) saturationLine() string {
	s := l.Saturation
	if !s.Measured {
		return fmt.Sprintf("saturation %.2f req/s fleet (%.2f per server), given with --saturation", s.FleetRPS, s.PerServerRPS)
	}
	return fmt.Sprintf("saturation %.2f req/s fleet (%.2f per server): round-robin keeps up at that rate, not at %.2f; measured in %.1f s (%d runs of %d requests, %d copies of the workload; --saturation %s reproduces it)",
		s.FleetRPS, s.PerServerRPS, s.Unstable, s.WallSeconds, s.Runs, s.Requests, s.Copies, strconv.FormatFloat(s.FleetRPS, 'g', -1, 64))
}

// writeHeadroom prints, metric by metric, the best heuristic and how predicted-latency and the
// oracle differ from it at one load.
func writeHeadroom(out io.Writer, s RungSummary) {
	if len(s.BestHeuristic) == 0 || (s.Oracle == nil && s.PredictedLatency == nil) {
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	names, values := "best heuristic\t", "its value\t"
	head := "\t"
	for _, m := range ladderMetrics {
		b, ok := s.BestHeuristic[m.key]
		if !ok {
			continue
		}
		head += m.column + "\t"
		names += b.Strategy + "\t"
		values += number(m, b.Value) + "\t"
	}
	fmt.Fprintln(tw, head)
	fmt.Fprintln(tw, names)
	fmt.Fprintln(tw, values)
	for _, v := range []struct {
		name string
		v    *Versus
	}{{"oracle", s.Oracle}, {"predicted-latency", s.PredictedLatency}} {
		if v.v == nil {
			continue
		}
		line := v.name + " vs best\t"
		for _, m := range ladderMetrics {
			if _, ok := s.BestHeuristic[m.key]; ok {
				line += difference(m, v.v) + "\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "(vs best: difference from the best heuristic on each metric; latencies in % of its, negative = faster; SLO attainment in points and goodput in %, positive = better)")
}

// number formats a metric's value as the routing table does.
func number(m metric, v float64) string {
	switch {
	case m.points:
		return fmt.Sprintf("%.3f", v)
	case m.key == "tpot_p50_ms" || m.key == "tpot_p99_ms" || m.key == "goodput_rps":
		return fmt.Sprintf("%.2f", v)
	case m.key == "e2e_p50_ms" || m.key == "e2e_p95_ms":
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// difference formats v's difference from the best heuristic on m, "-" when there is none.
func difference(m metric, v *Versus) string {
	d, ok := v.VsBest[m.vs]
	switch {
	case !ok:
		return "-"
	case m.points:
		return fmt.Sprintf("%+.1f pt", d)
	}
	return fmt.Sprintf("%+.1f%%", d)
}

// writeSummary prints one line per load: for TTFT p50 and p99 (and SLO attainment when requests
// had SLOs), the best heuristic's value and name, then predicted-latency's and the oracle's
// values with their difference from it.
func (l *LadderResult) writeSummary(out io.Writer) {
	if len(l.Loads) == 0 {
		return
	}
	shown := []metric{ladderMetrics[0], ladderMetrics[2]}
	for _, s := range l.Summary {
		if _, ok := s.BestHeuristic["slo_attainment"]; ok {
			shown = append(shown, ladderMetrics[7])
			break
		}
	}
	r := l.Loads[0].Result
	fmt.Fprintf(out, "\nladder: scenario %s, %d servers (%s), seed %d%s, saturation %.2f req/s fleet (%.2f per server)\n",
		r.Scenario, r.Servers, r.Preset, r.Seed, r.replicasText(), l.Saturation.FleetRPS, l.Saturation.PerServerRPS)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "load\treq/s\t"
	for _, m := range shown {
		col := m.column
		if col == "p99" {
			col = "TTFT p99"
		}
		head += col + ": best\theuristic\tpredicted\tvs\toracle\tvs\t"
	}
	fmt.Fprintln(tw, head)
	for i, s := range l.Summary {
		line := fmt.Sprintf("%.2f\t%.2f\t", s.Load, l.Loads[i].RateFleet)
		for _, m := range shown {
			b, ok := s.BestHeuristic[m.key]
			if !ok {
				line += "-\t-\t"
			} else {
				line += number(m, b.Value) + "\t" + b.Strategy + "\t"
			}
			for _, v := range []*Versus{s.PredictedLatency, s.Oracle} {
				if v == nil {
					line += "-\t-\t"
					continue
				}
				line += number(m, v.Values[m.key]) + "\t" + difference(m, v) + "\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "(TTFT in ms; best: the best heuristic (rr, least-load, load-prefix-*) on that metric; predicted: predicted-latency; vs: difference from best, negative = faster, SLO attainment in points)")
}

// WriteReport writes the ladder's HTML page (sim/report.WriteLadder) to file: TTFT p50 and p99
// (and SLO attainment) per strategy against load. The per-load charts of a single run's report
// are not included.
func (l *LadderResult) WriteReport(file string) error {
	in := report.LadderInput{Note: l.saturationLine()}
	if len(l.Loads) > 0 {
		r := l.Loads[0].Result
		in.Title = fmt.Sprintf("Routing bench load ladder: scenario %s, %d servers (%s), seed %d", r.Scenario, r.Servers, r.Preset, r.Seed)
		for _, name := range r.order {
			s := report.LadderStrategy{Name: name}
			for _, rung := range l.Loads {
				s.Summaries = append(s.Summaries, rung.Result.Strategies[name].Summary)
			}
			in.Strategies = append(in.Strategies, s)
		}
	}
	for _, rung := range l.Loads {
		in.Loads = append(in.Loads, rung.Load)
	}
	return report.WriteLadderFile(file, in)
}
