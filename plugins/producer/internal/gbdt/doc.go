// Package gbdt trains small gradient-boosted regression tree ensembles in pure
// Go and writes them as LightGBM text models (version=v3) that
// github.com/dmitryikh/leaves serves.
//
// The trainer is a second-order histogram booster in the style of LightGBM:
// each feature is cut into at most 255 equal-frequency bins, each tree is
// grown leaf-wise (best gain first) from gradient/hessian histograms with the
// subtraction trick, and leaves take the regularised Newton step
// -G/(H+λ) scaled by the learning rate. Two losses are supported: squared
// error (the conditional mean) and the pinball loss (a conditional quantile,
// with leaves renewed to residual quantiles as LightGBM does).
//
// Bin edges lie strictly between distinct training values and a split sends
// "bin <= b" left exactly when LightGBM's "x <= threshold" would, so
// Model.Predict and leaves' PredictSingle agree to the last bit on any input.
// Training is deterministic: the same data, Params and Seed produce the same
// model bytes. See README.md for the parameters and the format subset.
package gbdt
