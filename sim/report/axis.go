package report

import (
	"math"
	"strconv"
)

// axis maps data values to [0, 1] on a linear or base-10 log scale and lists its tick values.
type axis struct {
	log    bool
	lo, hi float64 // the domain; positive when log
	ticks  []float64
	// minor are unlabelled grid values: 2× and 5× each power of ten on a log axis.
	minor []float64
}

// useLog reports whether [lo, hi] spans more than two decades, which is when a latency axis
// switches to a log scale. It needs lo > 0.
func useLog(lo, hi float64) bool { return lo > 0 && hi/lo > 100 }

// newAxis returns an axis covering [lo, hi] (non-negative data). It is logarithmic when allowLog
// and the range spans more than two decades, otherwise linear from 0 with 1-2-5 ticks.
func newAxis(lo, hi float64, allowLog bool) axis {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || lo > hi {
		lo, hi = 0, 1
	}
	if allowLog && useLog(lo, hi) {
		return logAxis(lo, hi)
	}
	return linearAxis(min(lo, 0), hi)
}

func linearAxis(lo, hi float64) axis {
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 5)
	a, b := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	ax := axis{lo: a * step, hi: b * step}
	for k := a; k <= b; k++ {
		ax.ticks = append(ax.ticks, k*step)
	}
	return ax
}

func logAxis(lo, hi float64) axis {
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if a == b {
		b++
	}
	ax := axis{log: true, lo: math.Pow(10, a), hi: math.Pow(10, b)}
	for k := a; k <= b; k++ {
		ax.ticks = append(ax.ticks, math.Pow(10, k))
		if k < b {
			ax.minor = append(ax.minor, 2*math.Pow(10, k), 5*math.Pow(10, k))
		}
	}
	return ax
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f <= 1:
		return p
	case f <= 2:
		return 2 * p
	case f <= 5:
		return 5 * p
	default:
		return 10 * p
	}
}

// pos maps v to [0, 1] along the axis (clamped; non-positive values sit at the low end of a log axis).
func (a axis) pos(v float64) float64 {
	var f float64
	if a.log {
		if v <= 0 {
			return 0
		}
		f = (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	} else {
		f = (v - a.lo) / (a.hi - a.lo)
	}
	return min(max(f, 0), 1)
}

// tickLabel formats a tick value compactly: 0.3, 250, 20k.
func tickLabel(v float64) string {
	if math.Abs(v) >= 10000 {
		return strconv.FormatFloat(math.Round(v/1000*1e3)/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}
