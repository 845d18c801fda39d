package bench

// bench live's text and HTML report of a LiveResult.

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/foresight-router/foresight/sim/report"
	"github.com/foresight-router/foresight/sim/stats"
)

// WriteText prints the runs as three tables, outcomes and latencies (ms), then servers and cost,
// then each server's latencies and predictions (writeServerTable), and the SLO attainment by
// class when there are several classes.
func (r *LiveResult) WriteText(out io.Writer) error {
	trace := ""
	if r.Trace != "" {
		trace = " (" + r.Trace + ")"
	}
	fmt.Fprintf(out, "\nscenario %s%s, %d requests over %.1f s (%.2f req/s; the workload's %.2f req/s, speedup %g), %d servers (%s), seed %d\n",
		r.Scenario, trace, r.Requests, r.SpanSeconds, r.WindowRPS, r.RateRPS, r.Speedup, r.Servers, r.Preset, r.Seed)
	if len(r.Classes) > 0 {
		fmt.Fprintf(out, "classes %s\n", strings.Join(r.Classes, ", "))
	}
	if r.EngineCPU != "" {
		fmt.Fprintf(out, "engine CPU %s\n", r.EngineCPU)
	}
	if r.Disaggregation != "" {
		fmt.Fprintf(out, "disaggregated: %s (client baselines send whole requests to every server)\n", r.Disaggregation)
	}
	if r.Replicas != "" {
		fmt.Fprintf(out, "routers: %s, the client spreading requests over them round robin (router CPU: all of them; predictor and stage figures: the first)\n", r.Replicas)
	}
	for _, run := range r.Runs {
		if run.Killed != "" {
			fmt.Fprintf(out, "%s: stopped %s\n", run.Name, run.Killed)
		}
	}
	if s := r.Saturation; s != nil {
		how := "given"
		if s.Measured {
			how = fmt.Sprintf("measured: %d probes of %.0f s, the client sending round-robin; unstable at %.3g", len(s.Probes), s.ProbeSeconds, s.UnstablePerServerRPS)
		}
		sim := ""
		if s.SimulatedPerServerRPS > 0 {
			sim = fmt.Sprintf("; the simulator's %.3g", s.SimulatedPerServerRPS)
		}
		fmt.Fprintf(out, "load %g × the live saturation rate %.3g req/s per server (%s%s)\n", r.Load, s.PerServerRPS, how, sim)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tTTFT p50\tp95\tp99\tTPOT p50\tp95\tp99\tE2E p50\tp95\tp99\tSLO att.\tok\tshed\terr\tcut\tcached\t")
	var missing []string
	for _, run := range r.Runs {
		if run.Unavailable != "" {
			missing = append(missing, fmt.Sprintf("%s: unavailable: %s", run.Name, run.Unavailable))
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t%s\t%d\t%d\t%d\t%d\t%s\t\n", run.Name,
			run.TTFTMs.P50, run.TTFTMs.P95, run.TTFTMs.P99, run.TPOTMs.P50, run.TPOTMs.P95, run.TPOTMs.P99,
			run.E2EMs.P50, run.E2EMs.P95, run.E2EMs.P99, fraction(run.SLOAttainment), run.OK, run.Shed, run.Errors, run.Cut,
			fraction(run.CachedShare))
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "(latencies in ms, as the client measured them)")
	for _, run := range r.Runs {
		if d := run.Direct; d != nil {
			fmt.Fprintf(out, "%s: the shared fleet's other client sent %d straight to the servers: %d ok, TTFT p50 %.1f p99 %.1f, cached %s\n",
				run.Name, d.Sent, d.OK, d.TTFTMs.P50, d.TTFTMs.P99, fraction(d.CachedShare))
		}
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\trequests by server\tmax waiting\tMAPE ttft\ttpot\trouter CPU s\tms/req\tplugins CPU s\tengines CPU s\thost busy\tadded TTFT p50\tp99\tsend lag p99 ms\twall s\t")
	for _, run := range r.Runs {
		if run.Unavailable != "" {
			continue
		}
		var shares, waits []string
		for _, s := range run.ServerStats {
			shares = append(shares, fmt.Sprint(s.Requests))
			waits = append(waits, fmt.Sprintf("%.0f", s.MaxWaiting))
		}
		mape := func(t string) string {
			if v, ok := run.PredictorMAPE[t]; ok {
				return fmt.Sprintf("%.1f%%", 100*v)
			}
			return "-"
		}
		added50, added99 := "-", "-"
		if a := run.AddedTTFT; a != nil {
			added50, added99 = fmt.Sprintf("%.1f", a.Ms.P50), fmt.Sprintf("%.1f", a.Ms.P99)
		}
		busy := "-"
		if run.HostBusy != nil {
			busy = fmt.Sprintf("%.0f%%", 100**run.HostBusy)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t\n", run.Name, strings.Join(shares, "/"), strings.Join(waits, "/"),
			mape("ttft"), mape("tpot"), decimal(run.RouterCPUSeconds, 2), decimal(run.CPUMsPerRequest, 3),
			decimal(run.PluginsCPUSeconds, 2), decimal(run.EnginesCPUSeconds, 2), busy, added50, added99, run.SendLagMs.P99, run.WallSeconds)
	}
	_ = tw.Flush()
	fmt.Fprintln(out)
	writeServerTable(out, r.Runs)
	for _, run := range r.Runs {
		if run.AddedTTFT == nil {
			continue
		}
		var parts []string
		for _, b := range run.AddedTTFT.ByPrompt {
			if b.Requests > 0 {
				parts = append(parts, fmt.Sprintf("≥ %d tokens p50 %.1f p99 %.1f (%d)", b.MinTokens, b.Ms.P50, b.Ms.P99, b.Requests))
			}
		}
		fmt.Fprintf(out, "%s: added TTFT (ms, the client's TTFT minus the router's from its upstream) by prompt: %s; "+
			"of it held before dispatch p50 %.1f p99 %.1f\n", run.Name, strings.Join(parts, ", "), run.AddedTTFT.Held.P50, run.AddedTTFT.Held.P99)
		if w := run.DecisionWait; w != nil {
			fmt.Fprintf(out, "%s: waited for a decision round p50 %.2f p99 %.2f ms (%d requests)\n", run.Name, w.P50Ms, w.P99Ms, w.Requests)
		}
		if run.PluginProcesses > 0 {
			fmt.Fprintf(out, "%s: stage fallbacks %s; round trips (ms, mean/p99) %s\n", run.Name, fallbackCounts(run.StageFallbacks), roundTrips(run.StageRoundTrips))
		}
	}
	if len(r.Classes) > 1 {
		fmt.Fprintln(out)
		for _, run := range r.Runs {
			var parts []string
			for _, c := range run.ByClass {
				parts = append(parts, fmt.Sprintf("%s %s (TTFT p50 %.0f p99 %.0f ms, %d shed)", c.Name, fraction(c.Attainment), c.TTFTMs.P50, c.TTFTMs.P99, c.Shed))
			}
			if len(parts) > 0 {
				fmt.Fprintf(out, "%s: SLO attainment by class: %s; goodput %.2f req/s\n", run.Name, strings.Join(parts, ", "), run.GoodputRPS)
			}
		}
	}
	for _, run := range r.Runs {
		if run.FlowHeld > 0 || len(run.FlowShed) > 0 {
			fmt.Fprintf(out, "%s: flow control held %d requests (%.1f%% of those sent), shed %v%s\n", run.Name, run.FlowHeld, 100*run.FlowHeldShare, run.FlowShed, learnedSlots(run.ServerStats))
		}
	}
	for _, m := range missing {
		fmt.Fprintln(out, m)
	}
	return nil
}

// fraction formats a share with three decimals, or "-" when absent.
func fraction(f *float64) string { return decimal(f, 3) }

// decimal formats *f with n decimals, or "-" when absent.
func decimal(f *float64, n int) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", n, *f)
}

// WriteReport writes the self-contained HTML report of the run (sim/report, as bench routing's:
// the table and the charts) to file. Requests that did not end OK (shed, failed or cut) count
// as shed there.
func (r *LiveResult) WriteReport(file string) error {
	in := report.Input{Title: fmt.Sprintf("Live bench: scenario %s, %d servers (%s), %d requests at %.2f req/s, seed %d",
		r.Scenario, r.Servers, r.Preset, r.Requests, r.RateRPS, r.Seed)}
	for _, run := range r.Runs {
		st := report.Strategy{Name: run.Name, Unavailable: run.Unavailable, Outcomes: run.outcomes}
		if run.Unavailable == "" {
			st.Summary = stats.Summarize(run.outcomes)
		}
		in.Strategies = append(in.Strategies, st)
	}
	return report.WriteFile(file, in)
}

// learnedSlots says which slots flow control's detector learned for the servers, in their order
// ("" when none).
func learnedSlots(servers []LiveServer) string {
	if !slices.ContainsFunc(servers, func(s LiveServer) bool { return s.Slots > 0 }) {
		return ""
	}
	parts := make([]string, len(servers))
	for i, s := range servers {
		parts[i] = strconv.Itoa(s.Slots)
	}
	return "; learned slots " + strings.Join(parts, "/")
}

// roundTrips writes each plugin instance's mean and p99 round trip: "picker 0.45/1.20, …".
func roundTrips(stages []StageRoundTrips) string {
	parts := make([]string, len(stages))
	for i, st := range stages {
		parts[i] = fmt.Sprintf("%s %.2f/%.2f", st.Plugin, st.MeanMs, st.P99Ms)
	}
	return strings.Join(parts, ", ")
}

// fallbackCounts writes stage fallbacks by reason, in reason order: "none", or "timeout 3,
// unavailable 1".
func fallbackCounts(by map[string]float64) string {
	var parts []string
	for _, reason := range slices.Sorted(maps.Keys(by)) {
		if by[reason] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", reason, by[reason]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
