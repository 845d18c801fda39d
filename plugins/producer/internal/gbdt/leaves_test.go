package gbdt

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPredictMatchesLeaves trains both losses (with and without row
// subsampling), loads the text with leaves and compares predictions on
// 10,000 unseen rows, some with NaN and out-of-range values.
func TestPredictMatchesLeaves(t *testing.T) {
	train := nonlinear(5000, 6, 0.1, 1)
	test := nonlinear(10000, 6, 0.1, 2)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 10000 {
		switch rng.IntN(20) {
		case 0:
			test.Cols[rng.IntN(6)][i] = math.NaN()
		case 1:
			test.Cols[rng.IntN(6)][i] = 1e6 * (rng.Float64() - 0.5)
		}
	}
	// The gamma loss needs positive labels: the same rows with exp(label).
	positive := train
	positive.Label = make([]float64, len(train.Label))
	for i, y := range train.Label {
		positive.Label[i] = math.Exp(y)
	}
	cases := []struct {
		name string
		p    func(*Params)
	}{
		{"squared", func(*Params) {}},
		{"squared_subsample", func(p *Params) { p.Subsample = 0.7; p.MaxDepth = 0; p.NumLeaves = 31 }},
		{"quantile", func(p *Params) { p.Loss = Quantile; p.Alpha = 0.9 }},
		{"quantile_subsample", func(p *Params) { p.Loss = Quantile; p.Alpha = 0.5; p.Subsample = 0.5 }},
		{"gamma", func(p *Params) { p.Loss = Gamma }},
		{"gamma_subsample", func(p *Params) { p.Loss = Gamma; p.Subsample = 0.7 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := DefaultParams()
			c.p(&p)
			d := train
			if p.Loss == Gamma {
				d = positive
			}
			m := mustTrain(t, d, p)
			ens := loadLeaves(t, modelText(t, m))
			if ens.NEstimators() != m.NumTrees() || ens.NFeatures() != m.NumFeatures() {
				t.Fatalf("leaves sees %d trees × %d features, model has %d × %d",
					ens.NEstimators(), ens.NFeatures(), m.NumTrees(), m.NumFeatures())
			}
			maxDiff := 0.0
			for i := range 10000 {
				row := test.row(i)
				got, want := m.Predict(row), ens.PredictSingle(row, 0)
				if d := math.Abs(got - want); d > maxDiff || math.IsNaN(d) {
					maxDiff = d
				}
			}
			if !(maxDiff <= 1e-9) {
				t.Fatalf("max |Predict - leaves| = %g, want <= 1e-9", maxDiff)
			}
		})
	}
}

// TestSingleLeafTrees checks the num_leaves=1 form: a constant label gives
// no split with positive gain, so every tree is one leaf.
func TestSingleLeafTrees(t *testing.T) {
	d := Dataset{Cols: [][]float64{{1, 2, 3, 4}, {5, 5, 5, 5}}, Label: []float64{7, 7, 7, 7}}
	p := DefaultParams()
	p.MinSamplesLeaf = 1
	for _, loss := range []Loss{SquaredError, Quantile} {
		p.Loss = loss
		m := mustTrain(t, d, p)
		if m.NumLeaves() != m.NumTrees() {
			t.Fatalf("%v: %d leaves in %d trees, want single-leaf trees", loss, m.NumLeaves(), m.NumTrees())
		}
		ens := loadLeaves(t, modelText(t, m))
		for _, row := range [][]float64{{0, 0}, {2.5, 5}, {math.NaN(), math.Inf(1)}} {
			if got, want := m.Predict(row), ens.PredictSingle(row, 0); got != want || math.Abs(got-7) > 1e-12 {
				t.Fatalf("%v: Predict %v = %v, leaves %v, want 7", loss, row, got, want)
			}
		}
	}
}

// TestInfiniteAndNaNFeatures trains on ±Inf and NaN feature values, whose
// thresholds need care, and checks leaves agrees with the trainer.
func TestInfiniteAndNaNFeatures(t *testing.T) {
	d := nonlinear(400, 3, 0, 4)
	for i := 0; i < 400; i += 10 {
		d.Cols[0][i] = math.Inf(1)
		d.Cols[0][i+1] = math.Inf(-1)
		d.Cols[1][i+2] = math.NaN()
	}
	p := DefaultParams()
	p.MinSamplesLeaf = 5
	m := mustTrain(t, d, p)
	ens := loadLeaves(t, modelText(t, m))
	probe := []float64{math.Inf(-1), -5, -1, 0, 0.5, 2, 5, math.Inf(1), math.NaN()}
	for _, a := range probe {
		for _, b := range probe {
			for _, c := range []float64{0.2, 0.7} {
				row := []float64{a, b, c}
				if got, want := m.Predict(row), ens.PredictSingle(row, 0); got != want {
					t.Fatalf("Predict %v = %v, leaves %v", row, got, want)
				}
			}
		}
	}
}
