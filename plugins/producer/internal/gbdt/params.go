package gbdt

import (
	"errors"
	"fmt"
	"math"
)

// Loss selects the training objective.
type Loss int

const (
	// SquaredError fits the conditional mean (LightGBM objective "regression").
	SquaredError Loss = iota
	// Quantile fits the conditional Params.Alpha quantile with the pinball loss
	// (LightGBM objective "quantile").
	Quantile
	// Gamma fits the conditional mean of a positive label through a log link
	// with the gamma deviance (LightGBM objective "gamma"): the trees sum to
	// log μ and the model predicts exp of that. The deviance depends on y/μ
	// only, so every row's error counts relative to its size, as in MAPE; a
	// latency from 5 ms to 5 s spans three orders of magnitude, which squared
	// error would weight by their square. Labels must be > 0.
	Gamma
)

// String returns the LightGBM name of the objective.
func (l Loss) String() string {
	switch l {
	case SquaredError:
		return "regression"
	case Quantile:
		return "quantile"
	case Gamma:
		return "gamma"
	default:
		return fmt.Sprintf("Loss(%d)", int(l))
	}
}

// maxNumLeaves is LightGBM's own upper bound on num_leaves.
const maxNumLeaves = 131072

// Params are the training hyper-parameters. Field names follow XGBoost/LightGBM
// vocabulary; the LightGBM parameter each one corresponds to is written into
// the model's "parameters:" section.
type Params struct {
	Trees          int     // boosting rounds (num_iterations)
	MaxDepth       int     // max tree depth; 0 = unlimited, bounded by NumLeaves (max_depth)
	NumLeaves      int     // max leaves per tree (num_leaves)
	LearningRate   float64 // shrinkage applied to every leaf (learning_rate)
	Lambda         float64 // L2 regularisation on leaf values (lambda_l2)
	MinChildWeight float64 // min sum of hessians in a child (min_sum_hessian_in_leaf)
	MinSamplesLeaf int     // min rows in a leaf (min_data_in_leaf)
	Subsample      float64 // row fraction sampled per tree, in (0,1]; 1 = all rows (bagging_fraction)
	MaxBins        int     // quantile bins per feature, in [2,255] (max_bin)
	Loss           Loss    // objective
	Alpha          float64 // quantile level for Quantile, in (0,1) (alpha)
	Seed           uint64  // seeds row subsampling; same data+params+seed => same model bytes
	// Monotone holds one constraint per feature (monotone_constraints): +1 the prediction does
	// not fall as the feature grows, −1 it does not rise, 0 free; nil or empty: none
	// (monotone.go).
	Monotone []int8
}

// DefaultParams returns parameters for a small, fast model. The producer
// trains two models (TTFT and TPOT) on ~20k rows within a second on one core,
// and makes 200 leaves predictions per routing cycle within ~300µs, i.e.
// ~1.5µs each. Prediction cost is trees × depth node visits at ~15-20ns each
// (mostly branch mispredictions on varied rows), so the ensemble is 20 trees
// of depth 4: ~1.2µs per prediction, ~120ms to train on 20k×9, and R² 0.99 on
// the package's test function. README.md has the measurements for other sizes.
func DefaultParams() Params {
	return Params{
		// 20 rounds at learning rate 0.25 are within 0.005 R² of 40 rounds at
		// 0.15 on the test function for half the prediction cost.
		Trees:        20,
		LearningRate: 0.25,
		// Depth 4 bounds every prediction to 4 comparisons per tree and
		// still models 4-way interactions; 15 leaves lets leaf-wise growth
		// leave one of the 16 depth-4 slots unused where it gains least.
		NumLeaves: 15,
		MaxDepth:  4,
		// Lambda 1 (XGBoost's default) damps leaves with few rows.
		Lambda: 1,
		// LightGBM's defaults: min_sum_hessian_in_leaf 1e-3, min_data_in_leaf 20.
		MinChildWeight: 1e-3,
		MinSamplesLeaf: 20,
		// No bagging by default: the model is then independent of Seed, and
		// 20 shallow trees are not prone to overfit.
		Subsample: 1,
		// LightGBM's default max_bin; the most a uint8 bin index can hold.
		MaxBins: 255,
		Loss:    SquaredError,
		// Only used by Quantile; p90 is the usual latency tail target.
		Alpha: 0.9,
		Seed:  1,
	}
}

// Validate reports every invalid field, joined with errors.Join.
func (p Params) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("gbdt: "+format, args...))
	}
	if p.Trees < 1 {
		bad("Trees must be >= 1, got %d", p.Trees)
	}
	if p.MaxDepth < 0 {
		bad("MaxDepth must be >= 0 (0 = unlimited), got %d", p.MaxDepth)
	}
	if p.NumLeaves < 2 || p.NumLeaves > maxNumLeaves {
		bad("NumLeaves must be in [2,%d], got %d", maxNumLeaves, p.NumLeaves)
	}
	if !(p.LearningRate > 0) || math.IsInf(p.LearningRate, 0) {
		bad("LearningRate must be finite and > 0, got %v", p.LearningRate)
	}
	if !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0) {
		bad("Lambda must be finite and >= 0, got %v", p.Lambda)
	}
	if !(p.MinChildWeight >= 0) || math.IsInf(p.MinChildWeight, 0) {
		bad("MinChildWeight must be finite and >= 0, got %v", p.MinChildWeight)
	}
	if p.MinSamplesLeaf < 1 {
		bad("MinSamplesLeaf must be >= 1, got %d", p.MinSamplesLeaf)
	}
	if !(p.Subsample > 0 && p.Subsample <= 1) {
		bad("Subsample must be in (0,1], got %v", p.Subsample)
	}
	if p.MaxBins < 2 || p.MaxBins > 255 {
		bad("MaxBins must be in [2,255], got %d", p.MaxBins)
	}
	for f, c := range p.Monotone {
		if c < -1 || c > 1 {
			bad("Monotone[%d] must be -1, 0 or 1, got %d", f, c)
		}
	}
	switch p.Loss {
	case SquaredError, Gamma:
	case Quantile:
		if !(p.Alpha > 0 && p.Alpha < 1) {
			bad("Alpha must be in (0,1) for Quantile, got %v", p.Alpha)
		}
	default:
		bad("Loss must be SquaredError, Quantile or Gamma, got %d", int(p.Loss))
	}
	return errors.Join(errs...)
}
