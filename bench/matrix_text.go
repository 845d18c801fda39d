package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// describeWorkload says in one line what the matrix's workload is.
func describeWorkload() string {
	c := admissionWorkload
	return fmt.Sprintf("shared prefix: %d groups × %d users, system prompt %d tokens, question %.0f ± %.0f, output %.0f ± %.0f, single turn; %.0f %% one-off requests (a prompt of their own)",
		c.NumGroups, c.PromptsPerGroup, c.SystemPromptLen, c.Question.Mean, c.Question.StdDev, c.Output.Mean, c.Output.StdDev, 100*c.OneOffShare)
}

// WriteTable prints the matrix: per config and class the goodput and TTFT p99 (mean across seeds
// and 95 % interval), the completion share and the cache-hit shares, then per config the share of
// each prefix group admitted.
func (r *MatrixResult) WriteTable(out io.Writer) {
	seeds := make([]string, len(r.Seeds))
	for i, s := range r.Seeds {
		seeds[i] = fmt.Sprint(s)
	}
	sat := "measured"
	if !r.SaturationMeasured {
		sat = "given"
	}
	fmt.Fprintf(out, "\nadmission matrix: %d servers (%s), %d requests per run, seeds %s\n", r.Servers, r.Preset, r.Requests, strings.Join(seeds, ","))
	fmt.Fprintf(out, "workload: %s\n", r.Workload)
	fmt.Fprintf(out, "load %.2f × saturation %.1f req/s (%s, round-robin; --saturation %v reproduces it) = %.1f req/s fleet\n",
		r.Load, r.SaturationRPS, sat, r.SaturationRPS, r.RateFleet)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "config\tclass\tgoodput req/s\t95% CI\tcompleted\tTTFT p99 ms\t95% CI\thit arriving\thit admitted\t")
	for _, row := range r.Rows {
		name := row.Config
		if row.NewGroup {
			name += " +new group"
		}
		for _, c := range row.Classes {
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t[%.1f, %.1f]\t%.3f\t%.0f\t[%.0f, %.0f]\t%.3f\t%.3f\t\n", name, c.Class,
				c.GoodputRPS.Mean, c.GoodputRPS.Low, c.GoodputRPS.High, c.CompletionShare,
				c.TTFTP99Ms.Mean, c.TTFTP99Ms.Low, c.TTFTP99Ms.High, c.HitArriving, c.HitAdmitted)
			name = ""
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "(means across seeds; 95% CI: Student's t across seeds; completed: share of arrivals; hit: share of requests whose prompt the router's prefix index held in part on some endpoint at arrival)")
	fmt.Fprintln(out, "\nshare of each prefix group's requests admitted (with a new group: from its arrival on); predicted: share of admitted requests dispatched with a valid TTFT prediction")
	for _, row := range r.Rows {
		name := row.Config
		if row.NewGroup {
			name += " +new group"
		}
		parts := make([]string, len(row.Groups))
		for i, g := range row.Groups {
			parts[i] = fmt.Sprintf("%s %.3f", g.Group, g.AdmittedShare)
		}
		fmt.Fprintf(out, "  %-28s %s  predicted %.3f\n", name, strings.Join(parts, "  "), row.PredictedShare)
	}
	cpu := "n/a"
	if r.cpuOK {
		cpu = fmt.Sprintf("%.0f s", r.cpu.Seconds())
	}
	fmt.Fprintf(out, "runs took %.0f s wall, %s CPU in this process (plugin processes not counted)\n", r.wall.Seconds(), cpu)
}
