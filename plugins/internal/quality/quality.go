// Package quality keeps a producer's rolling prediction error — MAPE and MAE per target, and the
// coverage of a quantile model — over its most recent samples, and decides when predictions have
// drifted too far to be trusted.
package quality

import (
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Window is the rolling error of one target over the last N predictions it was told of.
type Window struct {
	ape, ae []float64
	under   []bool // actual ≤ predicted
	next, n int
	// running sums, recomputed now and then to shed rounding drift
	sumAPE, sumAE float64
	nUnder        int
	pushes        int
}

// NewWindow returns a window of the last n predictions.
func NewWindow(n int) *Window {
	n = max(n, 1)
	return &Window{ape: make([]float64, n), ae: make([]float64, n), under: make([]bool, n)}
}

// Add records one prediction and the actual value. Actuals ≤ 0 are ignored: a percentage
// error needs a positive actual.
func (w *Window) Add(predicted, actual float64) {
	if !(actual > 0) || math.IsNaN(predicted) || math.IsInf(predicted, 0) {
		return
	}
	ae := math.Abs(predicted - actual)
	ape := ae / actual
	if w.n == len(w.ape) {
		w.sumAPE -= w.ape[w.next]
		w.sumAE -= w.ae[w.next]
		if w.under[w.next] {
			w.nUnder--
		}
	} else {
		w.n++
	}
	w.ape[w.next], w.ae[w.next], w.under[w.next] = ape, ae, actual <= predicted
	w.sumAPE += ape
	w.sumAE += ae
	if actual <= predicted {
		w.nUnder++
	}
	w.next = (w.next + 1) % len(w.ape)
	if w.pushes++; w.pushes%(16*len(w.ape)) == 0 {
		w.resum()
	}
}

func (w *Window) resum() {
	w.sumAPE, w.sumAE = 0, 0
	for i := range w.n {
		w.sumAPE += w.ape[i]
		w.sumAE += w.ae[i]
	}
}

// Len returns how many predictions the window holds.
func (w *Window) Len() int { return w.n }

// MAPE returns the mean absolute percentage error as a fraction (0 when empty).
func (w *Window) MAPE() float64 {
	if w.n == 0 {
		return 0
	}
	return w.sumAPE / float64(w.n)
}

// MAE returns the mean absolute error (0 when empty).
func (w *Window) MAE() float64 {
	if w.n == 0 {
		return 0
	}
	return w.sumAE / float64(w.n)
}

// Coverage returns the fraction of actuals at or below the prediction (0 when empty).
func (w *Window) Coverage() float64 {
	if w.n == 0 {
		return 0
	}
	return float64(w.nUnder) / float64(w.n)
}

// Reset forgets every prediction (a new model is in service).
func (w *Window) Reset() {
	w.next, w.n, w.sumAPE, w.sumAE, w.nUnder = 0, 0, 0, 0, 0
}

// Stats returns the window as sdk.TargetStats; quantile adds the coverage.
func (w *Window) Stats(quantile bool) sdk.TargetStats {
	s := sdk.TargetStats{Samples: uint64(w.n), MAPE: w.MAPE(), MAE: w.MAE()}
	if quantile {
		c := w.Coverage()
		s.QuantileCoverage = &c
	}
	return s
}
