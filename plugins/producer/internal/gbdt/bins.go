package gbdt

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// binMapper maps one feature's values to bin indices. Bin b holds the values
// x with uppers[b-1] < x <= uppers[b]; the last bin is unbounded above. A split
// "bins <= b go left" is therefore exactly LightGBM's "x <= uppers[b] goes
// left", so the model predicts on raw values precisely what it learned on bins.
type binMapper struct {
	uppers   []float64 // strictly increasing split thresholds, len = bins-1
	min, max float64   // observed range, for feature_infos
}

func (m *binMapper) numBins() int { return len(m.uppers) + 1 }

// bin returns the bin of x (NaN is treated as 0, see Dataset).
func (m *binMapper) bin(x float64) int {
	if math.IsNaN(x) {
		x = 0
	}
	return sort.SearchFloat64s(m.uppers, x) // first upper >= x
}

// info is the LightGBM feature_infos entry: "[min:max]", or "none" for a
// feature that takes a single value and can never be split on.
func (m *binMapper) info() string {
	if len(m.uppers) == 0 {
		return "none"
	}
	return fmt.Sprintf("[%s:%s]", formatFloat(m.min), formatFloat(m.max))
}

// newBinMapper places at most maxBins bins over col so that each holds about
// the same number of rows. Cuts are only placed between distinct values, so
// a heavily repeated value stays in one bin (and typically gets its own).
func newBinMapper(col []float64, maxBins int) *binMapper {
	sorted := make([]float64, len(col))
	for i, x := range col {
		if math.IsNaN(x) {
			x = 0
		}
		sorted[i] = x
	}
	slices.Sort(sorted)

	// Distinct values and their multiplicities.
	var vals []float64
	var counts []int
	for i, x := range sorted {
		if i == 0 || x != sorted[i-1] {
			vals = append(vals, x)
			counts = append(counts, 0)
		}
		counts[len(counts)-1]++
	}
	m := &binMapper{min: vals[0], max: vals[len(vals)-1]}

	if len(vals) <= maxBins {
		for i := 1; i < len(vals); i++ {
			m.uppers = append(m.uppers, between(vals[i-1], vals[i]))
		}
		return m
	}
	// Greedy equal-frequency cuts: close a bin once it reaches its share of
	// the rows still unassigned, re-dividing the remainder after each cut so
	// that a large tie early on does not starve the later bins.
	remaining, acc := len(sorted), 0
	for i := 0; i < len(vals)-1 && len(m.uppers) < maxBins-1; i++ {
		acc += counts[i]
		target := float64(remaining) / float64(maxBins-len(m.uppers))
		if float64(acc) >= target {
			m.uppers = append(m.uppers, between(vals[i], vals[i+1]))
			remaining -= acc
			acc = 0
		}
	}
	return m
}

// between returns a threshold t with a <= t < b for a < b: the midpoint, as
// LightGBM writes, unless rounding (adjacent floats, infinities) pushes it out
// of that interval, in which case a itself is exact.
func between(a, b float64) float64 {
	t := a/2 + b/2 // halves first: a+b may overflow
	if t >= a && t < b {
		return t
	}
	return a
}
