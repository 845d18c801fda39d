package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/foresight-router/foresight/sim/stats"
)

// LadderInput is the load ladder's page: the strategies' figures at each load.
type LadderInput struct {
	// Title heads the page; Note, a paragraph under it (how the saturation rate was found).
	Title, Note string
	// Loads are the fractions of the saturation rate, in run order.
	Loads []float64
	// Strategies are shown in this order; a strategy's colour follows its index.
	Strategies []LadderStrategy
}

// LadderStrategy is one strategy's figures along the ladder.
type LadderStrategy struct {
	Name string
	// Summaries has one entry per load; nil where the strategy did not run.
	Summaries []*stats.Summary
}

// WriteLadder renders in as one HTML page to w: a table of TTFT p50 and p99 (and SLO
// attainment, when requests had objectives) per strategy and load, and the same figures charted
// against load. The output depends only on in.
func WriteLadder(w io.Writer, in LadderInput) error {
	var b bytes.Buffer
	title := cmp.Or(in.Title, "Routing bench: load ladder")
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<h1>%s</h1>\n",
		esc(title), css, esc(title))
	if in.Note != "" {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", esc(in.Note))
	}
	slo := false
	for _, s := range in.Strategies {
		for _, m := range s.Summaries {
			slo = slo || (m != nil && m.SLOAttainment != nil)
		}
	}
	writeLadderTable(&b, in, slo)
	metrics := []loadMetric{
		{"TTFT p50 against load", "TTFT p50 (ms)", func(m *stats.Summary) (float64, bool) { return m.TTFTMs.P50, true }, true},
		{"TTFT p99 against load", "TTFT p99 (ms)", func(m *stats.Summary) (float64, bool) { return m.TTFTMs.P99, true }, true},
	}
	if slo {
		metrics = append(metrics, loadMetric{"SLO attainment against load", "SLO attainment", func(m *stats.Summary) (float64, bool) {
			if m.SLOAttainment == nil {
				return 0, false
			}
			return *m.SLOAttainment, true
		}, false})
	}
	for _, m := range metrics {
		writeLoadChart(&b, in, m)
	}
	b.WriteString("</body>\n</html>\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// loadMetric is a figure charted against load: a latency (log axis over more than two decades)
// or a fraction (0 to 1).
type loadMetric struct {
	title, axis string
	value       func(*stats.Summary) (float64, bool)
	latency     bool
}

func writeLadderTable(b *bytes.Buffer, in LadderInput, slo bool) {
	per := 2
	if slo {
		per = 3
	}
	b.WriteString("<h2>TTFT by load</h2>\n<table>\n<thead><tr><th rowspan=\"2\">Strategy</th>")
	for _, l := range in.Loads {
		fmt.Fprintf(b, "<th colspan=\"%d\">load %.2f</th>", per, l)
	}
	b.WriteString("</tr>\n<tr>")
	for range in.Loads {
		b.WriteString("<th>p50</th><th>p99</th>")
		if slo {
			b.WriteString("<th>SLO</th>")
		}
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for i, s := range in.Strategies {
		fmt.Fprintf(b, "<tr><td><i style=\"display:inline-block;width:10px;height:10px;margin-right:6px;background:%s\"></i>%s</td>", colour(i), esc(s.Name))
		for j := range in.Loads {
			var m *stats.Summary
			if j < len(s.Summaries) {
				m = s.Summaries[j]
			}
			if m == nil {
				fmt.Fprintf(b, "<td class=\"na\" colspan=\"%d\">not run</td>", per)
				continue
			}
			fmt.Fprintf(b, "<td>%.1f</td><td>%.1f</td>", m.TTFTMs.P50, m.TTFTMs.P99)
			if slo {
				fmt.Fprintf(b, "<td>%s</td>", stats.Percent(m.SLOAttainment))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n<p class=\"note\">TTFT in ms.</p>\n")
}

// writeLoadChart draws m against load, one line with dots per strategy.
func writeLoadChart(b *bytes.Buffer, in LadderInput, m loadMetric) {
	lo, hi := math.Inf(1), math.Inf(-1)
	series := make([][]point, len(in.Strategies))
	var ds []drawn
	for i, s := range in.Strategies {
		for j, sum := range s.Summaries {
			if sum == nil || j >= len(in.Loads) {
				continue
			}
			if v, ok := m.value(sum); ok {
				series[i] = append(series[i], point{in.Loads[j], v})
				if v > 0 {
					lo = min(lo, v)
				}
				hi = max(hi, v)
			}
		}
		slices.SortStableFunc(series[i], func(a, b point) int { return cmp.Compare(a.x, b.x) })
		ds = append(ds, drawn{idx: i, name: s.Name})
	}
	empty := math.IsInf(hi, -1)
	if empty {
		lo, hi = 0, 1
	} else if math.IsInf(lo, 1) {
		lo = 0
	}
	maxLoad := 0.0
	for _, l := range in.Loads {
		maxLoad = max(maxLoad, l)
	}
	y := newAxis(0, 1, false)
	if m.latency {
		y = newAxis(lo, hi, true)
	}
	fmt.Fprintf(b, "<h2>%s</h2>\n", esc(m.title))
	legend(b, ds, "")
	c := newChart(m.title, newAxis(0, maxLoad, false), y, "load (fraction of the saturation rate)", m.axis)
	for i, pts := range series {
		c.line(pts, colour(i), `stroke-width="2"`)
		c.dots(pts, colour(i))
	}
	if empty {
		c.note("no data")
	}
	b.WriteString(c.String())
}
