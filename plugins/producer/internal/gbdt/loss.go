package gbdt

import (
	"math"
	"slices"

	"github.com/foresight-router/foresight/internal/quantile"
)

// initScore is the constant the first tree starts from: the mean for squared
// error and the Alpha-quantile for the pinball loss (the constants that
// minimise them), and the mean of log y for the gamma deviance. LightGBM
// starts gamma from log of the mean, its minimiser; but on labels spanning
// orders of magnitude the mean is the largest rows', and the geometric mean
// leaves every row's ratio y/μ, the Newton step's hessian, less lopsided.
func initScore(p *Params, label []float64) float64 {
	sum := 0.0
	switch p.Loss {
	case Quantile:
		return quantileOf(slices.Clone(label), p.Alpha)
	case Gamma:
		for _, y := range label {
			sum += math.Log(y)
		}
	default:
		for _, y := range label {
			sum += y
		}
	}
	return sum / float64(len(label))
}

// gradients writes the first and second derivatives of the loss with respect
// to each row's score.
func gradients(p *Params, label, score, grad, hess []float64) {
	switch p.Loss {
	case Quantile:
		// Pinball loss: slope 1-α above the label, -α below. Its second
		// derivative is 0 almost everywhere; 1 (as in LightGBM) turns the
		// Newton step into a plain gradient step, and the leaves are renewed
		// to residual quantiles afterwards anyway.
		for i, y := range label {
			if score[i]-y >= 0 {
				grad[i] = 1 - p.Alpha
			} else {
				grad[i] = -p.Alpha
			}
			hess[i] = 1
		}
	case Gamma:
		// Deviance per row, up to terms free of the score s = log μ:
		// y·e^−s + s. Its derivatives are 1 − y·e^−s and y·e^−s (LightGBM's
		// RegressionGammaLoss).
		for i, y := range label {
			r := y * math.Exp(-score[i])
			grad[i] = 1 - r
			hess[i] = r
		}
	default:
		for i, y := range label {
			grad[i] = score[i] - y
			hess[i] = 1
		}
	}
}

// renewQuantileLeaves replaces each leaf's Newton step by the Alpha-quantile
// of the residuals y - score of its rows, times the learning rate: the exact
// minimiser of the pinball loss over the leaf, which a gradient step of ±α
// only approaches slowly (LightGBM's RenewTreeOutput does the same), held to the
// leaf's monotone bounds.
func renewQuantileLeaves(t *tree, g *grower, p *Params, label, score []float64, buf []float64) []float64 {
	for k, l := range g.leaves {
		buf = buf[:0]
		for _, r := range g.rows[l.begin:l.end] {
			buf = append(buf, label[r]-score[r])
		}
		if len(buf) == 0 {
			t.leafValue[k] = 0
			continue
		}
		t.leafValue[k] = l.bounds.clamp(quantileOf(buf, p.Alpha) * p.LearningRate)
	}
	return buf
}

// quantileOf sorts v in place and returns its alpha-quantile, by the repository's one
// estimator (internal/quantile: linear interpolation at rank alpha·(n−1), NumPy's default).
func quantileOf(v []float64, alpha float64) float64 {
	slices.Sort(v)
	return quantile.Sorted(v, alpha)
}
