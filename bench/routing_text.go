package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/foresight-router/foresight/sim/report"
	"github.com/schollz/progressbar/v3"
)

// WriteReport writes the self-contained HTML report of the run, with its charts (sim/report),
// to file.
func (r *RoutingResult) WriteReport(file string) error {
	in := report.Input{Title: fmt.Sprintf("Routing bench: scenario %s, %d servers (%s), %d requests, seed %d",
		r.Scenario, r.Servers, r.Preset, r.Requests, r.Seed)}
	for _, name := range r.order {
		s := r.Strategies[name]
		st := report.Strategy{Name: name, Outcomes: s.outcomes, Unavailable: s.Unavailable}
		if s.Summary != nil {
			st.Summary = *s.Summary
		}
		in.Strategies = append(in.Strategies, st)
	}
	return report.WriteFile(file, in)
}

// newProgress returns a progress bar on w, or a silent one when w is nil (logs and pipes get the
// table only).
func newProgress(w io.Writer, total int, name string) *progressbar.ProgressBar {
	if w == nil {
		return progressbar.DefaultSilent(int64(total))
	}
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(fmt.Sprintf("%-18s", name)),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
}

// WriteTable prints the strategies' figures as bench routing's table (latencies in ms), then the
// strategies that could not run.
func (r *RoutingResult) WriteTable(out io.Writer) { r.writeTable(out, "") }

// writeTable is WriteTable with a heading line before the usual one when heading is not "".
func (r *RoutingResult) writeTable(out io.Writer, heading string) {
	fmt.Fprintln(out)
	if heading != "" {
		fmt.Fprintln(out, heading)
	}
	fmt.Fprintf(out, "scenario %s, %d servers (%s), %d requests, seed %d%s\n", r.Scenario, r.Servers, r.Preset, r.Requests, r.Seed, r.replicasText())
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tTTFT p50\tp95\tp99\tTPOT p50\tp99\tE2E p50\tp95\ttok/s\tSLO att.\tgoodput\tshed\thit rate\tcached\twall s\t")
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(r.Strategies)) {
		s := r.Strategies[name]
		if s.Unavailable != "" {
			missing = append(missing, fmt.Sprintf("%s: unavailable: %s", name, s.Unavailable))
			continue
		}
		att := "-"
		if s.SLOAttainment != nil {
			att = fmt.Sprintf("%.3f", *s.SLOAttainment)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t%s\t%.2f\t%.3f\t%.3f\t%.3f\t%.1f\t\n", name,
			s.TTFTMs.P50, s.TTFTMs.P95, s.TTFTMs.P99, s.TPOTMs.P50, s.TPOTMs.P99, s.E2EMs.P50, s.E2EMs.P95,
			s.ThroughputTokS, att, s.GoodputRPS, s.ShedRate, s.PrefixHitRate, s.CachedRatio, s.WallSeconds)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "(latencies in ms; hit rate: the fleet's prefix-cache hits, cached: of the routed requests' prompt tokens; ideal cached %.3f, one unbounded cache)\n", r.IdealCachedRatio)
	if r.Shared > 0 {
		fmt.Fprintf(out, "shared fleet: %.0f%% of the requests went straight to a random server, seen by no router; the figures are the routed requests'\n", 100*r.Shared)
	}
	if r.Prefix != PrefixRouter {
		fmt.Fprintf(out, "prefix source: %s (events: the engines' KV-cache events)\n", r.Prefix)
	}
	r.writeClasses(out)
	r.writeServers(out)
	for _, name := range slices.Sorted(maps.Keys(r.Strategies)) {
		if a := r.Strategies[name].Online; a != nil && name != "oracle" {
			fmt.Fprintf(out, "%s predictions: %s\n", name, a)
		}
	}
	for _, m := range missing {
		fmt.Fprintln(out, m)
	}
}
