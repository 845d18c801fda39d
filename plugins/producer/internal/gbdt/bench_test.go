package gbdt

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// BenchmarkTrain20k trains one DefaultParams model on 20,000 rows × 9
// features; the producer trains two per cycle.
func BenchmarkTrain20k(b *testing.B) {
	d := nonlinear(20000, 9, 0.1, 50)
	p := DefaultParams()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Train(d, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTrain20kQuantile(b *testing.B) {
	d := nonlinear(20000, 9, 0.1, 50)
	p := DefaultParams()
	p.Loss = Quantile
	for b.Loop() {
		if _, err := Train(d, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeavesPredictSingle is one leaves prediction with a DefaultParams
// model; the producer makes 200 per cycle.
func BenchmarkLeavesPredictSingle(b *testing.B) {
	d := nonlinear(20000, 9, 0.1, 50)
	ens := loadLeaves(b, modelText(b, mustTrain(b, d, DefaultParams())))
	rows := make([][]float64, 256)
	for i := range rows {
		rows[i] = d.row(i)
	}
	i := 0
	for b.Loop() {
		ens.PredictSingle(rows[i&255], 0)
		i++
	}
}

func BenchmarkPredict(b *testing.B) {
	d := nonlinear(20000, 9, 0.1, 50)
	m := mustTrain(b, d, DefaultParams())
	rows := make([][]float64, 256)
	for i := range rows {
		rows[i] = d.row(i)
	}
	i := 0
	for b.Loop() {
		m.Predict(rows[i&255])
		i++
	}
}

// TestSizeSweep prints train time, leaves prediction time and held-out R²
// for a few ensemble sizes. It is for sizing DefaultParams and runs only with
// GBDT_SWEEP=1 (and without -race, whose timings mean nothing).
func TestSizeSweep(t *testing.T) {
	if os.Getenv("GBDT_SWEEP") == "" {
		t.Skip("set GBDT_SWEEP=1 to run")
	}
	train := nonlinear(20000, 9, 0.1, 60)
	test := nonlinear(5000, 9, 0.1, 61)
	rows := make([][]float64, 1000)
	for i := range rows {
		rows[i] = test.row(i)
	}
	for _, sz := range []struct {
		trees, leaves, depth int
		lr                   float64
	}{
		{15, 15, 4, 0.3}, {20, 15, 4, 0.25}, {25, 15, 4, 0.2}, {20, 15, 6, 0.25}, {40, 15, 6, 0.15},
		{25, 7, 3, 0.25}, {30, 7, 3, 0.2}, {15, 31, 5, 0.3}, {100, 31, 0, 0.1},
	} {
		p := DefaultParams()
		p.Trees, p.NumLeaves, p.MaxDepth, p.LearningRate = sz.trees, sz.leaves, sz.depth, sz.lr
		start := time.Now()
		m := mustTrain(t, train, p)
		trainDur := time.Since(start)
		ens := loadLeaves(t, modelText(t, m))
		const reps = 20
		start = time.Now()
		for range reps {
			for _, r := range rows {
				ens.PredictSingle(r, 0)
			}
		}
		pred := time.Since(start) / (reps * time.Duration(len(rows)))
		t.Log(fmt.Sprintf("%3d trees × %2d leaves (depth %d, lr %.2f): train %4d ms, leaves predict %5d ns, R² %.4f, %d leaves",
			sz.trees, sz.leaves, sz.depth, sz.lr, trainDur.Milliseconds(), pred.Nanoseconds(), r2(m, test), m.NumLeaves()))
	}
}
