package gbdt

import (
	"errors"
	"math/rand/v2"
)

// pcgStream is the fixed PCG stream (increment) paired with Params.Seed.
const pcgStream = 0x9e3779b97f4a7c15

// Train fits a gradient-boosted tree ensemble to d. It is deterministic:
// the same data, parameters and seed give a model with the same bytes.
func Train(d Dataset, p Params) (*Model, error) {
	return train(d, p, true)
}

// train is Train with the quantile leaf renewal switchable, so that tests can
// show what it buys.
func train(d Dataset, p Params, renew bool) (*Model, error) {
	names, derr := d.validate(p.Loss)
	if err := errors.Join(p.Validate(), derr, monotoneFits(p.Monotone, len(d.Cols))); err != nil {
		return nil, err
	}
	data := newBinned(d.Cols, p.MaxBins)
	n := data.rows
	label := d.Label

	init := initScore(&p, label)
	score := make([]float64, n)
	for i := range score {
		score[i] = init
	}
	grad, hess := make([]float64, n), make([]float64, n)
	g := &grower{data: data, p: &p, grad: grad, hess: hess}

	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	rows := make([]int32, 0, n)
	rng := rand.New(rand.NewPCG(p.Seed, pcgStream))
	var buf []float64

	trees := make([]*tree, 0, p.Trees)
	for range p.Trees {
		gradients(&p, label, score, grad, hess)
		rows = rows[:0]
		if p.Subsample < 1 {
			// Independent Bernoulli draws per row, in row order, so the
			// sample depends only on the seed and the row count.
			for _, r := range all {
				if rng.Float64() < p.Subsample {
					rows = append(rows, r)
				}
			}
		}
		if len(rows) == 0 { // no subsampling, or a tiny data set drew nothing
			rows = append(rows, all...)
		}
		t := g.grow(rows)
		if p.Loss == Quantile && renew {
			buf = renewQuantileLeaves(t, g, &p, label, score, buf)
		}
		// Out-of-sample rows are scored too: the next gradients need them.
		for r := range score {
			score[r] += t.predictBinned(data, r)
		}
		trees = append(trees, t)
	}
	trees[0].addBias(init)

	m := &Model{names: names, params: p, trees: trees}
	m.infos = make([]string, data.feats)
	for f, bm := range data.mappers {
		m.infos[f] = bm.info()
	}
	return m, nil
}
