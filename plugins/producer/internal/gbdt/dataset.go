package gbdt

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Dataset is a column-major training set.
//
// Feature values may be NaN: like a LightGBM model with missing_type=None,
// which is what WriteText declares, NaN is treated as 0 both in training and
// in prediction. ±Inf feature values are allowed. Labels must be finite.
type Dataset struct {
	Names []string    // feature names (no whitespace, no '='); nil = Column_0, Column_1, …
	Cols  [][]float64 // column-major: Cols[f][row]
	Label []float64
}

// validate checks the shape and contents of d and returns the feature names
// to write (defaulted when d.Names is nil).
func (d Dataset) validate(loss Loss) ([]string, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("gbdt: dataset: "+format, args...))
	}
	n := len(d.Label)
	if n == 0 {
		bad("no rows (empty Label)")
	}
	if len(d.Cols) == 0 {
		bad("no features (empty Cols)")
	}
	for f, col := range d.Cols {
		if len(col) != n {
			bad("column %d has %d rows, Label has %d", f, len(col), n)
		}
	}
	for i, y := range d.Label {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			bad("Label[%d] is %v; labels must be finite", i, y)
			break // one is enough to name the problem
		}
		if loss == Gamma && y <= 0 {
			bad("Label[%d] is %v; the gamma loss needs labels > 0", i, y)
			break
		}
	}
	names := d.Names
	if names == nil {
		names = make([]string, len(d.Cols))
		for f := range names {
			names[f] = fmt.Sprintf("Column_%d", f)
		}
	} else if len(names) != len(d.Cols) {
		bad("%d Names for %d Cols", len(names), len(d.Cols))
	}
	seen := make(map[string]int, len(names))
	for f, name := range names {
		switch {
		case name == "":
			bad("Names[%d] is empty", f)
		case strings.ContainsAny(name, "= \t\r\n\v\f"):
			// The text format splits feature_names on spaces and key=value on '='.
			bad("Names[%d] %q contains whitespace or '='", f, name)
		}
		if g, dup := seen[name]; dup {
			bad("Names[%d] and Names[%d] are both %q", g, f, name)
		}
		seen[name] = f
	}
	return names, errors.Join(errs...)
}
