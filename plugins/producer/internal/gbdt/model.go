package gbdt

// Model is a trained ensemble. It is immutable after Train and safe for
// concurrent use.
type Model struct {
	names  []string
	infos  []string // LightGBM feature_infos entries
	params Params
	trees  []*tree // the initial score is folded into trees[0]
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
