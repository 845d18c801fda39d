package gbdt

import (
	"fmt"
	"math"
)

// The trainer never evaluates its own trees in production: the producer predicts through leaves,
// from the text WriteText writes. These evaluate the trained model in Go, so the tests can prove
// that leaves computes exactly what the trainer built.

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

// predict walks the tree on raw feature values exactly as leaves does for a
// numerical split with missing_type=None: NaN becomes 0, then x <= threshold
// goes left.
func (t *tree) predict(row []float64) float64 {
	if len(t.splitFeature) == 0 {
		return t.leafValue[0]
	}
	node := 0
	for {
		x := row[t.splitFeature[node]]
		if math.IsNaN(x) {
			x = 0
		}
		next := t.right[node]
		if x <= t.threshold[node] {
			next = t.left[node]
		}
		if next < 0 {
			return t.leafValue[^next]
		}
		node = next
	}
}
