package gbdt

// leaf is a leaf of the tree being grown. Its rows are grower.rows[begin:end].
type leaf struct {
	begin, end int
	tot        binStat
	depth      int
	parent     int  // internal node above it, -1 for the root
	isLeft     bool // which child of parent it is
	hist       histogram
	best       split
	splittable bool
	bounds     bounds // the range of its output (monotone.go)
}

// grower grows one tree leaf-wise (best-first): it always splits the leaf
// whose best split has the largest gain, until NumLeaves leaves exist or no
// leaf has a split with positive gain.
type grower struct {
	data       *binned
	p          *Params
	grad, hess []float64
	rows       []int32 // the tree's rows, partitioned so each leaf's are contiguous
	scratch    []int32
	pool       []histogram
	leaves     []leaf
}

func (g *grower) takeHist() histogram {
	if n := len(g.pool); n > 0 {
		h := g.pool[n-1]
		g.pool = g.pool[:n-1]
		return h
	}
	return make(histogram, g.data.offsets[g.data.feats])
}

func (g *grower) dropHist(l *leaf) {
	if l.hist != nil {
		g.pool = append(g.pool, l.hist)
		l.hist = nil
	}
}

// evaluate finds l's best split, or marks it unsplittable and frees its
// histogram, which is only ever needed to split it.
func (g *grower) evaluate(l *leaf) {
	l.splittable = false
	if (g.p.MaxDepth == 0 || l.depth < g.p.MaxDepth) && l.tot.n >= 2*g.p.MinSamplesLeaf {
		l.best, l.splittable = g.data.bestSplit(l.hist, l.tot, l.bounds, g.p)
	}
	if !l.splittable {
		g.dropHist(l)
	}
}

// grow builds a tree on rows (which it reorders) from the current gradients.
// Leaf values are Newton steps; g.leaves keeps each leaf's rows for callers
// that renew them.
func (g *grower) grow(rows []int32) *tree {
	g.rows = rows
	if len(g.scratch) < len(rows)+1 { // partition writes one past the right rows
		g.scratch = make([]int32, len(rows)+1)
	}
	root := leaf{end: len(rows), parent: -1, hist: g.takeHist(), bounds: unbounded}
	for _, r := range rows {
		root.tot.g += g.grad[r]
		root.tot.h += g.hess[r]
	}
	root.tot.n = len(rows)
	g.data.build(root.hist, rows, g.grad, g.hess)
	g.leaves = append(g.leaves[:0], root)
	g.evaluate(&g.leaves[0])

	t := &tree{shrinkage: g.p.LearningRate}
	for len(g.leaves) < g.p.NumLeaves {
		i := -1
		for k := range g.leaves {
			if g.leaves[k].splittable && (i < 0 || g.leaves[k].best.gain > g.leaves[i].best.gain) {
				i = k
			}
		}
		if i < 0 {
			break
		}
		g.split(t, i)
	}
	for k := range g.leaves {
		l := &g.leaves[k]
		g.dropHist(l)
		t.leafValue = append(t.leafValue, l.bounds.clamp(leafOutput(l.tot, g.p)))
		t.leafWeight = append(t.leafWeight, l.tot.h)
		t.leafCount = append(t.leafCount, l.tot.n)
	}
	return t
}

// split turns leaf i into an internal node whose left child keeps index i
// and whose right child is the new last leaf, as LightGBM numbers them.
func (g *grower) split(t *tree, i int) {
	l := g.leaves[i]
	s := l.best
	node := len(t.splitFeature)
	t.splitFeature = append(t.splitFeature, s.feature)
	t.splitGain = append(t.splitGain, s.gain)
	t.threshold = append(t.threshold, g.data.mappers[s.feature].uppers[s.bin])
	t.thresholdBin = append(t.thresholdBin, s.bin)
	t.left = append(t.left, ^i)
	t.right = append(t.right, ^len(g.leaves))
	t.internalValue = append(t.internalValue, leafOutput(l.tot, g.p))
	t.internalWeight = append(t.internalWeight, l.tot.h)
	t.internalCount = append(t.internalCount, l.tot.n)
	if l.parent >= 0 {
		if l.isLeft {
			t.left[l.parent] = node
		} else {
			t.right[l.parent] = node
		}
	}

	mid := g.partition(l.begin, l.end, s.feature, s.bin)
	right := binStat{g: l.tot.g - s.left.g, h: l.tot.h - s.left.h, n: l.tot.n - s.left.n}
	var c int8
	if len(g.p.Monotone) > 0 {
		c = g.p.Monotone[s.feature]
	}
	lb, rb := childBounds(l.bounds, s.left, right, c, g.p)
	lc := leaf{begin: l.begin, end: mid, tot: s.left, depth: l.depth + 1, parent: node, isLeft: true, bounds: lb}
	rc := leaf{begin: mid, end: l.end, tot: right, depth: l.depth + 1, parent: node, bounds: rb}

	if len(g.leaves)+1 < g.p.NumLeaves {
		// Build the smaller child's histogram from its rows and derive the
		// larger one's by subtraction from the parent's, which it reuses.
		small, large := &lc, &rc
		if rc.tot.n < lc.tot.n {
			small, large = &rc, &lc
		}
		small.hist = g.takeHist()
		g.data.build(small.hist, g.rows[small.begin:small.end], g.grad, g.hess)
		l.hist.subtract(small.hist)
		large.hist = l.hist
		g.evaluate(&lc)
		g.evaluate(&rc)
	} else {
		// The tree is full after this split: no child will be split.
		g.dropHist(&l)
	}
	g.leaves[i] = lc
	g.leaves = append(g.leaves, rc)
}

// partition stably reorders rows[begin:end] so that those going left
// (bin <= threshold bin) come first, and returns where the right ones start.
// Every row is written to both sides and only the matching cursor advances:
// the direction is random from row to row, so a branch would mispredict.
func (g *grower) partition(begin, end, feature, bin int) int {
	rows, nf := g.rows, g.data.feats
	scratch := g.scratch[:end-begin+1]
	mid, nr := begin, 0
	for _, r := range rows[begin:end] {
		left := 0
		if int(g.data.bins[int(r)*nf+feature]) <= bin {
			left = 1
		}
		rows[mid] = r
		scratch[nr] = r
		mid += left
		nr += 1 - left
	}
	copy(rows[mid:end], scratch[:nr])
	return mid
}
