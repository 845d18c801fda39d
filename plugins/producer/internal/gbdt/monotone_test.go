package gbdt

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// confounded is a data set whose label falls with x0 (−0.3 a unit) and rises with x1 (+1 a
// unit): what a latency looks like against the load at dispatch when a router sends the most
// requests where the latency turns out lowest.
func confounded(n int, seed uint64) Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	x0, x1, y := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		x0[i], x1[i] = rng.Float64()*10, rng.Float64()*10
		y[i] = 5 - 0.3*x0[i] + x1[i] + 0.5*rng.NormFloat64()
	}
	return Dataset{Cols: [][]float64{x0, x1}, Label: y}
}

// rises reports whether m's prediction never falls as x0 goes over [0, 10] by 0.05, at each x1
// of a grid (sign +1), or never rises (sign −1).
func rises(m *Model, sign float64) bool {
	for x1 := 0.0; x1 <= 10; x1 += 1.25 {
		prev := math.Inf(-1)
		for x0 := 0.0; x0 <= 10; x0 += 0.05 {
			v := sign * m.Predict([]float64{x0, x1})
			if v < prev-1e-12 {
				return false
			}
			prev = v
		}
	}
	return true
}

func TestMonotoneHoldsAgainstTheData(t *testing.T) {
	d := confounded(4000, 1)
	free := mustTrain(t, d, DefaultParams())
	if rises(free, 1) {
		t.Fatal("unconstrained, the model should follow the data down in x0; the test shows nothing")
	}
	for _, c := range []int8{1, -1} {
		p := DefaultParams()
		p.Monotone = []int8{c, 0}
		m := mustTrain(t, d, p)
		if !rises(m, float64(c)) {
			t.Errorf("Monotone[0] = %d: the prediction moves against it in x0", c)
		}
		if r := r2(m, d); r < 0.5 {
			t.Errorf("Monotone[0] = %d: R² %.3f, the free feature x1 should still be learned", c, r)
		}
	}
	// Gamma and quantile leaves are held too (quantile leaves are renewed after the split).
	for _, loss := range []Loss{Gamma, Quantile} {
		p := DefaultParams()
		p.Loss, p.Monotone = loss, []int8{1, 0}
		g := confounded(4000, 2)
		for i := range g.Label {
			g.Label[i] = math.Max(g.Label[i], 0.1) // gamma needs positive labels
		}
		if m := mustTrain(t, g, p); !rises(m, 1) {
			t.Errorf("%v: the prediction falls in x0 under Monotone +1", loss)
		}
	}
}

func TestMonotoneZerosAreNoConstraint(t *testing.T) {
	d := nonlinear(2000, 3, 0.1, 5)
	p := DefaultParams()
	want := modelText(t, mustTrain(t, d, p))
	p.Monotone = []int8{0, 0, 0}
	if got := modelText(t, mustTrain(t, d, p)); !bytes.Equal(got, want) {
		t.Error("all-zero constraints changed the model")
	}
}

func TestMonotoneParamsChecked(t *testing.T) {
	p := DefaultParams()
	p.Monotone = []int8{1, 2}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "Monotone[1] must be -1, 0 or 1") {
		t.Errorf("a constraint of 2: got %v", err)
	}
	p.Monotone = []int8{1}
	if _, err := Train(confounded(100, 1), p); err == nil || !strings.Contains(err.Error(), "1 Monotone constraints for 2 features") {
		t.Errorf("one constraint for two features: got %v", err)
	}
}

func TestChildBoundsCutAtTheMidpoint(t *testing.T) {
	p := DefaultParams() // λ 1, learning rate 0.25
	// Newton outputs: left −(−3)/(1+1)·0.25 = 0.375, right −(−9)/(2+1)·0.25 = 0.75.
	left, right := binStat{g: -3, h: 1, n: 10}, binStat{g: -9, h: 2, n: 10}
	lb, rb := childBounds(unbounded, left, right, 1, &p)
	if lb.hi != 0.5625 || rb.lo != 0.5625 || !math.IsInf(lb.lo, -1) || !math.IsInf(rb.hi, 1) {
		t.Errorf("+1: left %+v right %+v, want the midpoint 0.5625 between them", lb, rb)
	}
	lb, rb = childBounds(bounds{lo: 0, hi: 0.6}, left, right, -1, &p)
	// right's 0.75 is held at 0.6: midpoint (0.375 + 0.6)/2 = 0.4875.
	if lb.lo != 0.4875 || lb.hi != 0.6 || rb.lo != 0 || rb.hi != 0.4875 {
		t.Errorf("−1 within [0, 0.6]: left %+v right %+v", lb, rb)
	}
	if lb, rb = childBounds(bounds{lo: 0, hi: 1}, left, right, 0, &p); lb != (bounds{0, 1}) || rb != lb {
		t.Errorf("free feature: children %+v %+v, want the parent's bounds", lb, rb)
	}
	// A split whose outputs are in the wrong order is no candidate: left 0.375 < right 0.75.
	tot := binStat{g: -12, h: 3, n: 20}
	parent := boundedScore(tot, leafOutput(tot, &p), &p) // 144/4 = 36, score's G²/(H+λ)
	if math.Abs(parent-36) > 1e-12 {
		t.Fatalf("the parent's bounded score at its own Newton step is %v, want score's 36", parent)
	}
	if _, ok := monotoneGain(parent, tot, left, unbounded, -1, &p); ok {
		t.Error("−1 accepted a split whose left output is below its right")
	}
	gain, ok := monotoneGain(parent, tot, left, unbounded, 1, &p)
	// Unclamped it is score's gain: 9/2 + 81/3 − 144/4 = 4.5 + 27 − 36 = −4.5.
	if !ok || math.Abs(gain-(-4.5)) > 1e-12 {
		t.Errorf("+1: gain %v ok %v, want −4.5 (G²/(H+λ) of the children less the parent's)", gain, ok)
	}
}
