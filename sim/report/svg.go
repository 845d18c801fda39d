package report

import (
	"fmt"
	"html"
	"strings"
)

// Chart geometry in px: the SVG is chartW×chartH, the plot area sits inside the margins.
const (
	chartW, chartH                     = 900, 360
	marginL, marginR, marginT, marginB = 72, 16, 16, 52
	plotW, plotH                       = chartW - marginL - marginR, chartH - marginT - marginB
)

// palette holds one colour per strategy, by display index (cycled past eight).
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

func colour(i int) string { return palette[i%len(palette)] }

// svgChart accumulates one chart's SVG: axes, grid, then data drawn by the caller.
type svgChart struct {
	x, y axis
	b    strings.Builder
}

func newChart(label string, x, y axis, xLabel, yLabel string) *svgChart {
	c := &svgChart{x: x, y: y}
	fmt.Fprintf(&c.b, `<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		chartW, chartH, chartW, chartH, html.EscapeString(label))
	fmt.Fprintf(&c.b, `<rect x="%d" y="%d" width="%d" height="%d" class="plot"/>`+"\n", marginL, marginT, plotW, plotH)
	for _, t := range x.minor {
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="grid minor"/>`, c.px(t), marginT, c.px(t), marginT+plotH)
	}
	for _, t := range y.minor {
		fmt.Fprintf(&c.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="grid minor"/>`, marginL, c.py(t), marginL+plotW, c.py(t))
	}
	for _, t := range x.ticks {
		px := c.px(t)
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="grid"/>`, px, marginT, px, marginT+plotH)
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px, marginT+plotH+18, html.EscapeString(tickLabel(t)))
	}
	for _, t := range y.ticks {
		py := c.py(t)
		fmt.Fprintf(&c.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="grid"/>`, marginL, py, marginL+plotW, py)
		fmt.Fprintf(&c.b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", marginL-6, py, html.EscapeString(tickLabel(t)))
	}
	fmt.Fprintf(&c.b, `<text x="%d" y="%d" text-anchor="middle" class="label">%s</text>`+"\n", marginL+plotW/2, chartH-10, html.EscapeString(xLabel))
	fmt.Fprintf(&c.b, `<text x="16" y="%d" text-anchor="middle" class="label" transform="rotate(-90 16 %d)">%s</text>`+"\n",
		marginT+plotH/2, marginT+plotH/2, html.EscapeString(yLabel))
	return c
}

func (c *svgChart) px(v float64) float64 { return marginL + c.x.pos(v)*plotW }
func (c *svgChart) py(v float64) float64 { return marginT + (1-c.y.pos(v))*plotH }

// line draws pts as one polyline; attrs is extra trusted attribute text.
func (c *svgChart) line(pts []point, col, attrs string) {
	if len(pts) == 0 {
		return
	}
	fmt.Fprintf(&c.b, `<polyline fill="none" stroke="%s" %s points="`, col, attrs)
	for i, p := range pts {
		if i > 0 {
			c.b.WriteByte(' ')
		}
		fmt.Fprintf(&c.b, "%.1f,%.1f", c.px(p.x), c.py(p.y))
	}
	c.b.WriteString("\"/>\n")
}

// dots draws pts as small circles.
func (c *svgChart) dots(pts []point, col string) {
	if len(pts) == 0 {
		return
	}
	fmt.Fprintf(&c.b, `<g fill="%s" fill-opacity="0.45">`, col)
	for _, p := range pts {
		fmt.Fprintf(&c.b, `<circle cx="%.1f" cy="%.1f" r="1.8"/>`, c.px(p.x), c.py(p.y))
	}
	c.b.WriteString("</g>\n")
}

// note writes a centred message in the plot area (used when there is no data).
func (c *svgChart) note(msg string) {
	fmt.Fprintf(&c.b, `<text x="%d" y="%d" text-anchor="middle" class="label">%s</text>`+"\n",
		marginL+plotW/2, marginT+plotH/2, html.EscapeString(msg))
}

func (c *svgChart) String() string { return c.b.String() + "</svg>\n" }
