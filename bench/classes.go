package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// classSummaries summarizes each request class's outcomes on its own (nil without classes):
// what a mixed-priority run is judged by, e.g. the critical class's TTFT p99.
func classSummaries(reqs []workload.Request, outcomes []stats.Outcome) map[string]stats.Summary {
	by := map[string][]stats.Outcome{}
	for i := range reqs {
		if c := reqs[i].Class; c != "" && !outcomes[i].Direct { // a shared fleet's direct requests are not the router's
			by[c] = append(by[c], outcomes[i])
		}
	}
	if len(by) == 0 {
		return nil
	}
	out := make(map[string]stats.Summary, len(by))
	for c, os := range by {
		out[c] = stats.Summarize(os)
	}
	return out
}

// serverSummaries summarizes the outcomes of the requests each server served (the shed ones
// are in no server's).
func serverSummaries(outcomes []stats.Outcome) map[string]stats.Summary {
	by := map[string][]stats.Outcome{}
	for _, o := range outcomes {
		if o.Server != "" {
			by[o.Server] = append(by[o.Server], o)
		}
	}
	out := make(map[string]stats.Summary, len(by))
	for id, os := range by {
		out[id] = stats.Summarize(os)
	}
	return out
}

// writeServers prints, for each strategy, the requests each server served and their SLO
// attainment and TPOT p50 there: where a policy sent its load, and what it cost there.
func (r *RoutingResult) writeServers(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	wrote := false
	for _, name := range slices.Sorted(maps.Keys(r.Strategies)) {
		s := r.Strategies[name]
		if len(s.Servers) == 0 {
			continue
		}
		if !wrote {
			fmt.Fprintln(tw, "strategy\tserver\trequests\tTTFT p50\tp99\tTPOT p50\tp99\tSLO att.\t")
			wrote = true
		}
		for _, id := range slices.Sorted(maps.Keys(s.Servers)) {
			ss := s.Servers[id]
			att := "-"
			if ss.SLOAttainment != nil {
				att = fmt.Sprintf("%.3f", *ss.SLOAttainment)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.2f\t%.2f\t%s\t\n", name, id, ss.Requests,
				ss.TTFTMs.P50, ss.TTFTMs.P99, ss.TPOTMs.P50, ss.TPOTMs.P99, att)
		}
	}
	if wrote {
		fmt.Fprintln(out, "per server (latencies in ms)")
		_ = tw.Flush()
	}
}

// writeClasses prints each strategy's figures per class, and the flow-control queue's share and
// wait, when the run had classes or flow control.
func (r *RoutingResult) writeClasses(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	wrote := false
	for _, name := range slices.Sorted(maps.Keys(r.Strategies)) {
		s := r.Strategies[name]
		if s.Summary == nil || (len(s.Classes) == 0 && s.HeldShare == 0) {
			continue
		}
		if !wrote {
			fmt.Fprintln(tw, "strategy\tclass\trequests\tTTFT p50\tp99\tSLO att.\tshed\theld\tqueued p50\tp99\t")
			wrote = true
		}
		rows := map[string]stats.Summary{"all": *s.Summary}
		maps.Copy(rows, s.Classes)
		for _, c := range slices.Sorted(maps.Keys(rows)) {
			cs := rows[c]
			att := "-"
			if cs.SLOAttainment != nil {
				att = fmt.Sprintf("%.3f", *cs.SLOAttainment)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%s\t%.3f\t%.3f\t%.1f\t%.1f\t\n", name, c, cs.Requests,
				cs.TTFTMs.P50, cs.TTFTMs.P99, att, cs.ShedRate, cs.HeldShare, cs.QueuedMs.P50, cs.QueuedMs.P99)
		}
	}
	if wrote {
		fmt.Fprintln(out, "per class (latencies in ms; held: share that waited in the router's flow-control queue, queued: how long)")
		_ = tw.Flush()
	}
}
