package gbdt

// tree is one regression tree in LightGBM's array layout: internal node i
// sends x[splitFeature[i]] <= threshold[i] to left[i], the rest to right[i];
// a child c < 0 is the leaf ^c. A tree with one leaf has no internal nodes.
type tree struct {
	splitFeature   []int
	splitGain      []float64
	threshold      []float64
	thresholdBin   []int // the bin form of threshold, for scoring training rows
	left, right    []int
	internalValue  []float64
	internalWeight []float64
	internalCount  []int
	leafValue      []float64
	leafWeight     []float64
	leafCount      []int
	shrinkage      float64
}

func (t *tree) numLeaves() int { return len(t.leafValue) }

// predictBinned is predict on the binned training matrix.
func (t *tree) predictBinned(b *binned, r int) float64 {
	if len(t.splitFeature) == 0 {
		return t.leafValue[0]
	}
	rb := b.bins[r*b.feats : r*b.feats+b.feats]
	node := 0
	for {
		next := t.right[node]
		if int(rb[t.splitFeature[node]]) <= t.thresholdBin[node] {
			next = t.left[node]
		}
		if next < 0 {
			return t.leafValue[^next]
		}
		node = next
	}
}

// addBias adds v to every output of t. LightGBM folds the initial score into
// the first tree this way, so a model is just the sum of its trees.
func (t *tree) addBias(v float64) {
	for i := range t.leafValue {
		t.leafValue[i] += v
	}
	for i := range t.internalValue {
		t.internalValue[i] += v
	}
}

// leafOutput is the Newton step -G/(H+λ), scaled by the learning rate.
func leafOutput(s binStat, p *Params) float64 {
	den := s.h + p.Lambda
	if den <= 0 {
		return 0 // no rows and no regularisation: nothing to move
	}
	return -s.g / den * p.LearningRate
}
