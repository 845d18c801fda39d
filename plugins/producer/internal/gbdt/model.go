package gbdt

import (
	"fmt"
	"math"
)

// Model is a trained ensemble. It is immutable after Train and safe for
// concurrent use.
type Model struct {
	names  []string
	infos  []string // LightGBM feature_infos entries
	params Params
	trees  []*tree // the initial score is folded into trees[0]
}

// Predict returns the model's output for one row of len >= NumFeatures()
// feature values, in Dataset column order; NaN is treated as 0. It is the sum
// of the trees' outputs in order (exp of it for Gamma), which is what leaves'
// PredictSingle computes from the text written by WriteText, to the last bit
// (loaded with its transformation for Gamma).
func (m *Model) Predict(row []float64) float64 {
	if len(row) < len(m.names) {
		panic(fmt.Sprintf("gbdt: Predict got %d features, model has %d", len(row), len(m.names)))
	}
	sum := 0.0
	for _, t := range m.trees {
		sum += t.predict(row)
	}
	if m.params.Loss == Gamma {
		return math.Exp(sum)
	}
	return sum
}

// NumFeatures is the number of features the model was trained on.
func (m *Model) NumFeatures() int { return len(m.names) }

// NumTrees is the number of trees, always Params.Trees (a tree that finds no
// useful split is kept as a single leaf).
func (m *Model) NumTrees() int { return len(m.trees) }

// FeatureNames returns the feature names written to the model.
func (m *Model) FeatureNames() []string { return append([]string(nil), m.names...) }

// NumLeaves returns the total number of leaves over all trees.
func (m *Model) NumLeaves() int {
	n := 0
	for _, t := range m.trees {
		n += t.numLeaves()
	}
	return n
}

// splitCounts counts the splits on each feature (LightGBM's "split"
// feature importance).
func (m *Model) splitCounts() []int {
	c := make([]int, len(m.names))
	for _, t := range m.trees {
		for _, f := range t.splitFeature {
			c[f]++
		}
	}
	return c
}
