package gbdt

import (
	"fmt"
	"math"
)

// Monotone constraints (LightGBM's monotone_constraints, its "basic" method). A feature
// constrained +1 can only raise the prediction as it grows, one constrained −1 only lower it.
// Every leaf carries bounds on its output: a split on a constrained feature gives its children
// the bounds of the parent cut at the midpoint of their two outputs, the lower child below it and
// the upper one above, and a split on any other feature passes the bounds down unchanged. A
// split whose children's outputs (clamped to the leaf's bounds) are in the wrong order is not a
// candidate. So every output of a subtree under the lower child is at most every output under
// the upper one, and, trees adding up, the model is monotone in each constrained feature.

// bounds are the range a leaf's output (after shrinkage, as leafOutput gives it) must stay in.
type bounds struct{ lo, hi float64 }

// unbounded is the root's range.
var unbounded = bounds{lo: math.Inf(-1), hi: math.Inf(1)}

func (b bounds) clamp(v float64) float64 { return min(max(v, b.lo), b.hi) }

// constrained reports whether any feature has a constraint, so the grower can keep to the
// unconstrained arithmetic (and its exact model bytes) otherwise.
func constrained(monotone []int8) bool {
	for _, c := range monotone {
		if c != 0 {
			return true
		}
	}
	return false
}

// monotoneFits checks that there is one constraint per feature of a data set with feats
// features, or none at all (Params.Validate checks the values).
func monotoneFits(monotone []int8, feats int) error {
	if len(monotone) != 0 && len(monotone) != feats {
		return fmt.Errorf("gbdt: %d Monotone constraints for %d features", len(monotone), feats)
	}
	return nil
}

// boundedScore is the structure score of a leaf with totals s whose output is held at w (after
// shrinkage): −(2·G·u + (H+λ)·u²) for the unshrunk step u = w / LearningRate, which is score's
// G²/(H+λ) when w is the leaf's own Newton step.
func boundedScore(s binStat, w float64, p *Params) float64 {
	u := w / p.LearningRate
	return -(2*s.g*u + (s.h+p.Lambda)*u*u)
}

// monotoneGain is the gain of splitting a leaf with totals tot, bounds b and bounded score
// parent (computed once per leaf) into left and the rest on a feature with constraint c, its
// children's outputs clamped to b; ok is false when their order breaks the constraint.
func monotoneGain(parent float64, tot, left binStat, b bounds, c int8, p *Params) (gain float64, ok bool) {
	right := binStat{g: tot.g - left.g, h: tot.h - left.h, n: tot.n - left.n}
	wl, wr := b.clamp(leafOutput(left, p)), b.clamp(leafOutput(right, p))
	if (c > 0 && wl > wr) || (c < 0 && wl < wr) {
		return 0, false
	}
	return boundedScore(left, wl, p) + boundedScore(right, wr, p) - parent, true
}

// childBounds returns the bounds of the two children of a leaf with bounds b split into left
// and right on a feature with constraint c: b itself for an unconstrained feature, else b cut at
// the midpoint of the children's outputs.
func childBounds(b bounds, left, right binStat, c int8, p *Params) (lb, rb bounds) {
	if c == 0 {
		return b, b
	}
	mid := (b.clamp(leafOutput(left, p)) + b.clamp(leafOutput(right, p))) / 2
	lb, rb = b, b
	if c > 0 {
		lb.hi, rb.lo = min(b.hi, mid), max(b.lo, mid)
	} else {
		lb.lo, rb.hi = max(b.lo, mid), min(b.hi, mid)
	}
	return lb, rb
}
