// Package report renders the routing bench's results as one self-contained HTML page: a summary
// table and inline SVG charts (TTFT over time, TTFT and E2E CDFs, predicted vs actual TTFT), with
// no external resources, so it can be viewed offline.
package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"time"

	"github.com/foresight-router/foresight/sim/stats"
)

const (
	// timeBucketCount is the number of arrival-time slices of the TTFT-over-time chart.
	timeBucketCount = 60
	// cdfMaxPoints caps the points drawn per CDF line.
	cdfMaxPoints = 500
	// scatterMaxPoints caps the predicted-vs-actual points drawn per strategy.
	scatterMaxPoints = 2000
)

// Input is everything the page shows.
type Input struct {
	// Title heads the page, e.g. "Routing bench: scenario C, 4 servers, 2000 requests, seed 1".
	Title string
	// Strategies are shown in this order; a strategy's colour follows its index.
	Strategies []Strategy
}

// Strategy is one routing strategy's results.
type Strategy struct {
	Name string
	// Summary fills the strategy's table row.
	Summary stats.Summary
	// Outcomes are the per-request results, in arrival order, for the charts.
	Outcomes []stats.Outcome
	// Unavailable, when non-empty, is why the strategy did not run: it is listed with this
	// reason and no data.
	Unavailable string
}

// WriteFile renders in as one HTML page (Write) into the file path, created or truncated.
func WriteFile(path string, in Input) error {
	return toFile(path, func(w io.Writer) error { return Write(w, in) })
}

// WriteLadderFile renders in as one HTML page (WriteLadder) into the file path.
func WriteLadderFile(path string, in LadderInput) error {
	return toFile(path, func(w io.Writer) error { return WriteLadder(w, in) })
}

func toFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating the report: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Write renders in as one HTML page to w. The output depends only on in (same input, same bytes).
func Write(w io.Writer, in Input) error {
	var b bytes.Buffer
	title := in.Title
	title = cmp.Or(title, "Routing bench")
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<h1>%s</h1>\n",
		esc(title), css, esc(title))
	writeTable(&b, in.Strategies)
	writeCharts(&b, in.Strategies)
	b.WriteString("</body>\n</html>\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

const css = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;max-width:960px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}
thead th{background:#f3f3f3}
td.na{text-align:left;color:#777;font-style:italic}
.legend{font-size:13px;margin:4px 0}
.legend span{margin-right:16px;white-space:nowrap}
.legend i{display:inline-block;width:14px;height:4px;margin-right:5px;vertical-align:middle}
.note{font-size:13px;color:#555}
svg{display:block;font-size:12px;font-family:inherit}
svg .plot{fill:#fff;stroke:#888}
svg .grid{stroke:#e4e4e4}
svg .minor{stroke:#f2f2f2}
svg .label{font-size:13px;fill:#333}
`

func writeTable(b *bytes.Buffer, ss []Strategy) {
	b.WriteString("<h2>Summary</h2>\n<table>\n<thead><tr><th rowspan=\"2\">Strategy</th><th colspan=\"3\">TTFT (ms)</th><th colspan=\"2\">TPOT (ms)</th><th colspan=\"2\">E2E (ms)</th>" +
		"<th rowspan=\"2\">Throughput (tok/s)</th><th rowspan=\"2\">SLO attainment</th><th rowspan=\"2\">Goodput (req/s)</th><th rowspan=\"2\">Shed rate</th><th colspan=\"2\">MAPE</th></tr>\n" +
		"<tr><th>p50</th><th>p95</th><th>p99</th><th>p50</th><th>p99</th><th>p50</th><th>p95</th><th>TTFT</th><th>TPOT</th></tr></thead>\n<tbody>\n")
	for i, s := range ss {
		fmt.Fprintf(b, "<tr><td><i style=\"display:inline-block;width:10px;height:10px;margin-right:6px;background:%s\"></i>%s</td>", colour(i), esc(s.Name))
		if s.Unavailable != "" {
			fmt.Fprintf(b, "<td class=\"na\" colspan=\"14\">unavailable: %s</td></tr>\n", esc(s.Unavailable))
			continue
		}
		m := s.Summary
		for _, v := range []float64{m.TTFTMs.P50, m.TTFTMs.P95, m.TTFTMs.P99, m.TPOTMs.P50, m.TPOTMs.P99, m.E2EMs.P50, m.E2EMs.P95} {
			fmt.Fprintf(b, "<td>%.1f</td>", v)
		}
		fmt.Fprintf(b, "<td>%.0f</td><td>%s</td><td>%.2f</td><td>%.1f%%</td><td>%s</td><td>%s</td></tr>\n",
			m.ThroughputTokS, stats.Percent(m.SLOAttainment), m.GoodputRPS, 100*m.ShedRate,
			stats.Percent(m.PredictionMAPE.TTFT), stats.Percent(m.PredictionMAPE.TPOT))
	}
	b.WriteString("</tbody>\n</table>\n")
}

// drawn is a strategy that has data for the charts, with its display index for the colour.
type drawn struct {
	idx       int
	name      string
	outs      []stats.Outcome
	ttft, e2e []float64
	shed      int
}

func writeCharts(b *bytes.Buffer, ss []Strategy) {
	var ds []drawn
	var unavailable []string
	for i, s := range ss {
		if s.Unavailable != "" {
			unavailable = append(unavailable, fmt.Sprintf("%s (%s)", s.Name, s.Unavailable))
			continue
		}
		d := drawn{idx: i, name: s.Name, outs: s.Outcomes}
		d.ttft, d.e2e, d.shed = served(s.Outcomes)
		ds = append(ds, d)
	}
	if len(unavailable) > 0 {
		b.WriteString("<p class=\"note\">Not run: ")
		for i, u := range unavailable {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(esc(u))
		}
		b.WriteString(".</p>\n")
	}
	b.WriteString("<p class=\"note\">Shed requests are excluded from the latency charts: ")
	for i, d := range ds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%s %d of %d", esc(d.name), d.shed, len(d.outs))
	}
	if len(ds) == 0 {
		b.WriteString("no strategy ran")
	}
	b.WriteString(".</p>\n")

	writeTimeChart(b, ds)
	writeCDF(b, ds, "TTFT CDF", "TTFT (ms)", func(d drawn) []float64 { return d.ttft })
	writeCDF(b, ds, "E2E CDF", "E2E latency (ms)", func(d drawn) []float64 { return d.e2e })
	writeScatter(b, ds)
}

func legend(b *bytes.Buffer, ds []drawn, extra string) {
	b.WriteString("<div class=\"legend\">")
	for _, d := range ds {
		fmt.Fprintf(b, "<span><i style=\"background:%s\"></i>%s</span>", colour(d.idx), esc(d.name))
	}
	if extra != "" {
		fmt.Fprintf(b, "<span class=\"note\">%s</span>", esc(extra))
	}
	b.WriteString("</div>\n")
}

func writeTimeChart(b *bytes.Buffer, ds []drawn) {
	start, end := time.Duration(math.MaxInt64), time.Duration(0)
	for _, d := range ds {
		for i := range d.outs {
			start, end = min(start, d.outs[i].Arrival), max(end, d.outs[i].Arrival)
		}
	}
	if start > end {
		start, end = 0, 0
	}
	series := make([][]bucket, len(ds))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, d := range ds {
		series[i] = timeBuckets(d.outs, start, end, timeBucketCount)
		for _, bk := range series[i] {
			if bk.n > 0 {
				lo, hi = min(lo, bk.p50), max(hi, bk.p95)
			}
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	b.WriteString("<h2>TTFT over time</h2>\n")
	legend(b, ds, fmt.Sprintf("solid: p50, faint: p95 of each of %d arrival-time buckets", timeBucketCount))
	c := newChart("TTFT over time", newAxis(start.Seconds(), max(end.Seconds(), start.Seconds()), false), newAxis(lo, hi, true), "arrival time (s)", "TTFT (ms)")
	empty := true
	for i, d := range ds {
		// Empty buckets break the line rather than being drawn as zero.
		var p50, p95 []point
		flush := func() {
			c.line(p95, colour(d.idx), `stroke-width="1.2" stroke-opacity="0.35"`)
			c.line(p50, colour(d.idx), `stroke-width="2"`)
			p50, p95 = nil, nil
		}
		for _, bk := range series[i] {
			if bk.n == 0 {
				flush()
				continue
			}
			empty = false
			p50 = append(p50, point{bk.midS, bk.p50})
			p95 = append(p95, point{bk.midS, bk.p95})
		}
		flush()
	}
	if empty {
		c.note("no served requests")
	}
	b.WriteString(c.String())
}

func writeCDF(b *bytes.Buffer, ds []drawn, title, xLabel string, values func(drawn) []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, d := range ds {
		for _, v := range values(d) {
			if v > 0 {
				lo = min(lo, v)
			}
			hi = max(hi, v)
		}
	}
	if math.IsInf(hi, -1) {
		lo, hi = 0, 1
	} else if math.IsInf(lo, 1) {
		lo = 0
	}
	x := newAxis(lo, hi, true)
	fmt.Fprintf(b, "<h2>%s</h2>\n", esc(title))
	scale := "linear"
	if x.log {
		scale = "log"
	}
	legend(b, ds, "x axis: "+scale+" scale")
	c := newChart(title, x, newAxis(0, 1, false), xLabel, "fraction of served requests")
	empty := true
	for _, d := range ds {
		pts := cdfPoints(values(d), cdfMaxPoints)
		if len(pts) > 0 {
			empty = false
			// Start the line at fraction 0 at the smallest value.
			pts = append([]point{{pts[0].x, 0}}, pts...)
		}
		c.line(pts, colour(d.idx), `stroke-width="2"`)
	}
	if empty {
		c.note("no served requests")
	}
	b.WriteString(c.String())
}

func writeScatter(b *bytes.Buffer, ds []drawn) {
	pts := make([][]point, len(ds))
	lo, hi := math.Inf(1), math.Inf(-1)
	var with []drawn
	for i, d := range ds {
		pts[i] = subsample(predictions(d.outs), scatterMaxPoints)
		for _, p := range pts[i] {
			for _, v := range []float64{p.x, p.y} {
				if v > 0 {
					lo = min(lo, v)
				}
				hi = max(hi, v)
			}
		}
		if len(pts[i]) > 0 {
			with = append(with, d)
		}
	}
	b.WriteString("<h2>Predicted vs actual TTFT</h2>\n")
	if len(with) == 0 {
		b.WriteString("<p class=\"note\">No strategy made predictions.</p>\n")
		return
	}
	if math.IsInf(lo, 1) {
		lo = 0
	}
	ax := newAxis(lo, hi, true)
	legend(b, with, fmt.Sprintf("grey: y = x; at most %d points per strategy", scatterMaxPoints))
	c := newChart("Predicted vs actual TTFT", ax, ax, "actual TTFT (ms)", "predicted TTFT (ms)")
	c.line([]point{{ax.lo, ax.lo}, {ax.hi, ax.hi}}, "#999", `stroke-dasharray="4 3"`)
	for i, d := range ds {
		c.dots(pts[i], colour(d.idx))
	}
	b.WriteString(c.String())
}

func esc(s string) string { return html.EscapeString(s) }
