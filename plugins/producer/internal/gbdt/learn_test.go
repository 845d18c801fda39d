package gbdt

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestLearnsNonlinearFunction(t *testing.T) {
	train := nonlinear(10000, 9, 0.1, 10)
	test := nonlinear(5000, 9, 0.1, 11)
	m := mustTrain(t, train, DefaultParams())
	if got := r2(m, test); got < 0.95 {
		t.Fatalf("held-out R² = %.4f, want >= 0.95", got)
	}
}

// quantileStats returns the fraction of rows whose label is at or below the
// prediction, overall and within the low-noise (x1 < 0.25) and high-noise
// (x1 > 0.75) thirds of heteroscedastic data, and the mean pinball loss.
func quantileStats(m *Model, d Dataset, alpha float64) (all, low, high, pinball float64) {
	var n, nLow, nHigh, c, cLow, cHigh float64
	for i, y := range d.Label {
		pred := m.Predict(d.row(i))
		in := 0.0
		if y <= pred {
			in = 1
			pinball += (1 - alpha) * (pred - y)
		} else {
			pinball += alpha * (y - pred)
		}
		n, c = n+1, c+in
		switch x1 := d.Cols[1][i]; {
		case x1 < 0.25:
			nLow, cLow = nLow+1, cLow+in
		case x1 > 0.75:
			nHigh, cHigh = nHigh+1, cHigh+in
		}
	}
	return c / n, cLow / nLow, cHigh / nHigh, pinball / n
}

func TestQuantileCoverage(t *testing.T) {
	trainSet := heteroscedastic(10000, 20)
	test := heteroscedastic(10000, 21)
	p := DefaultParams()
	p.Loss, p.Alpha = Quantile, 0.9

	m := mustTrain(t, trainSet, p)
	all, low, high, loss := quantileStats(m, test, p.Alpha)
	t.Logf("renewed leaves: coverage %.3f (low noise %.3f, high noise %.3f), pinball %.4f", all, low, high, loss)
	for name, c := range map[string]float64{"overall": all, "low-noise": low, "high-noise": high} {
		if c < 0.85 || c > 0.95 {
			t.Errorf("%s p90 coverage %.3f outside [0.85, 0.95]", name, c)
		}
	}

	// Without renewal each tree moves a leaf by at most α·LearningRate, so
	// the model stays near the unconditional quantile: right on average but
	// too wide where the noise is low and too narrow where it is high.
	plain, err := train(trainSet, p, false)
	if err != nil {
		t.Fatal(err)
	}
	pAll, pLow, pHigh, pLoss := quantileStats(plain, test, p.Alpha)
	t.Logf("gradient leaves: coverage %.3f (low noise %.3f, high noise %.3f), pinball %.4f", pAll, pLow, pHigh, pLoss)
	if loss >= pLoss {
		t.Errorf("renewal did not lower the pinball loss: %.4f vs %.4f without", loss, pLoss)
	}
	if gap, pGap := high-low, pHigh-pLow; abs(gap) >= abs(pGap) {
		t.Errorf("renewal did not even out coverage: high-low gap %.3f vs %.3f without", gap, pGap)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestDeterministicBytes(t *testing.T) {
	d := nonlinear(3000, 6, 0.2, 30)
	p := DefaultParams()
	p.Subsample = 0.6
	p.Seed = 42
	a := modelText(t, mustTrain(t, d, p))
	b := modelText(t, mustTrain(t, d, p))
	if !bytes.Equal(a, b) {
		t.Fatal("two trainings with the same seed wrote different bytes")
	}
	p.Seed = 43
	if c := modelText(t, mustTrain(t, d, p)); bytes.Equal(a, c) {
		t.Fatal("a different seed with Subsample < 1 wrote the same bytes")
	}
	p.Loss = Quantile
	if !bytes.Equal(modelText(t, mustTrain(t, d, p)), modelText(t, mustTrain(t, d, p))) {
		t.Fatal("quantile: two trainings with the same seed wrote different bytes")
	}
}

// TestGammaFitsRelativeError trains both mean losses (100 trees, enough for
// either to converge on this function) on a positive label spanning three
// orders of magnitude with 5% relative noise: squared error spends its
// splits on the largest labels and misses small ones by far more than 5%;
// the gamma deviance weighs every row by its relative error.
func TestGammaFitsRelativeError(t *testing.T) {
	trainSet, test := multiplicative(20000, 0.05, 30), multiplicative(5000, 0.05, 31)
	mape := func(l Loss) float64 {
		p := DefaultParams()
		p.Loss, p.Trees = l, 100
		m := mustTrain(t, trainSet, p)
		sum := 0.0
		for i, y := range test.Label {
			sum += math.Abs(m.Predict(test.row(i))-y) / y
		}
		return sum / float64(len(test.Label))
	}
	sq, gamma := mape(SquaredError), mape(Gamma)
	t.Logf("held-out MAPE: squared error %.4f, gamma %.4f", sq, gamma)
	if gamma > 0.10 || gamma >= sq/2 {
		t.Errorf("gamma MAPE %.4f, squared error %.4f: want gamma ≤ 0.10 and under half of squared error's", gamma, sq)
	}
}

func TestGammaRejectsNonPositiveLabels(t *testing.T) {
	d := multiplicative(100, 0.05, 1)
	d.Label[42] = 0
	p := DefaultParams()
	p.Loss = Gamma
	if _, err := Train(d, p); err == nil || !strings.Contains(err.Error(), "Label[42]") {
		t.Fatalf("Train with a zero label under gamma: %v, want an error naming Label[42]", err)
	}
}
