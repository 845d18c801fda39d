package gbdt

// binStat accumulates the gradient, hessian and row count of one bin.
type binStat struct {
	g, h float64
	n    int
}

// histogram holds a binStat per (feature, bin), features laid out back to
// back at the offsets in binned.offsets.
type histogram []binStat

// binned is the training matrix after binning: row-major so that building a
// histogram walks each row's features contiguously.
type binned struct {
	rows, feats int
	bins        []uint8 // bins[row*feats+f]
	mappers     []*binMapper
	offsets     []int // offsets[f] = first histogram slot of feature f; offsets[feats] = total
}

func newBinned(cols [][]float64, maxBins int) *binned {
	b := &binned{rows: len(cols[0]), feats: len(cols)}
	b.mappers = make([]*binMapper, b.feats)
	b.offsets = make([]int, b.feats+1)
	for f, col := range cols {
		b.mappers[f] = newBinMapper(col, maxBins)
		b.offsets[f+1] = b.offsets[f] + b.mappers[f].numBins()
	}
	b.bins = make([]uint8, b.rows*b.feats)
	for f, col := range cols {
		m := b.mappers[f]
		for r, x := range col {
			b.bins[r*b.feats+f] = uint8(m.bin(x))
		}
	}
	return b
}

// build fills h with the statistics of rows.
func (b *binned) build(h histogram, rows []int32, grad, hess []float64) {
	clear(h)
	nf := b.feats
	for _, r := range rows {
		g, hs := grad[r], hess[r]
		rb := b.bins[int(r)*nf : int(r)*nf+nf]
		for f, bin := range rb {
			s := &h[b.offsets[f]+int(bin)]
			s.g += g
			s.h += hs
			s.n++
		}
	}
}

// subtract sets parent to parent - child: the histogram of the child's sibling
// without touching its rows (the "histogram subtraction trick").
func (h histogram) subtract(child histogram) {
	for i := range h {
		h[i].g -= child[i].g
		h[i].h -= child[i].h
		h[i].n -= child[i].n
	}
}

// split is a candidate split of a leaf: rows with bin <= bin go left.
type split struct {
	feature, bin int
	gain         float64
	left         binStat // totals of the left child
}

// score is the structure score G²/(H+λ) whose increase is the split gain
// (the constant factor ½ of the second-order expansion is dropped, as
// LightGBM does).
func score(g, h, lambda float64) float64 {
	return g * g / (h + lambda)
}

// bestSplit scans every feature's bins of a leaf with totals tot and bounds
// bd and returns the split with the largest positive gain that satisfies the
// min-child and monotone constraints; ok is false when there is none. Ties keep the lowest feature
// and bin, so the result does not depend on anything but the data.
func (b *binned) bestSplit(h histogram, tot binStat, bd bounds, p *Params) (best split, ok bool) {
	parent := score(tot.g, tot.h, p.Lambda)
	mono := constrained(p.Monotone)
	if mono { // the leaf's own value may be held by its bounds
		parent = boundedScore(tot, bd.clamp(leafOutput(tot, p)), p)
	}
	for f := 0; f < b.feats; f++ {
		fh := h[b.offsets[f]:b.offsets[f+1]]
		var left binStat
		for bin := 0; bin < len(fh)-1; bin++ {
			left.g += fh[bin].g
			left.h += fh[bin].h
			left.n += fh[bin].n
			if left.n < p.MinSamplesLeaf || left.h < p.MinChildWeight {
				continue
			}
			rn, rh := tot.n-left.n, tot.h-left.h
			if rn < p.MinSamplesLeaf {
				break // only shrinks from here on
			}
			if rh < p.MinChildWeight {
				break
			}
			var gain float64
			if mono {
				var fine bool
				if gain, fine = monotoneGain(parent, tot, left, bd, p.Monotone[f], p); !fine {
					continue
				}
			} else {
				gain = score(left.g, left.h, p.Lambda) + score(tot.g-left.g, rh, p.Lambda) - parent
			}
			if gain > best.gain {
				best = split{feature: f, bin: bin, gain: gain, left: left}
				ok = true
			}
		}
	}
	return best, ok
}
