package gbdt

import (
	"bufio"
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dmitryikh/leaves"
)

// nonlinear draws n rows of y = 3·sin(x0) + x1² + 2·[x2 > 0.5] + N(0, noise²)
// over nf >= 3 features; features beyond x2 are distractors, and x3 (if
// present) takes few distinct values to exercise ties in binning.
func nonlinear(n, nf int, noise float64, seed uint64) Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	d := Dataset{Cols: make([][]float64, nf), Label: make([]float64, n)}
	for f := range d.Cols {
		d.Cols[f] = make([]float64, n)
	}
	for i := range n {
		for f := range d.Cols {
			switch f {
			case 0:
				d.Cols[f][i] = rng.Float64()*6 - 3
			case 1:
				d.Cols[f][i] = rng.Float64()*4 - 2
			case 3:
				d.Cols[f][i] = float64(rng.IntN(5))
			default:
				d.Cols[f][i] = rng.Float64()
			}
		}
		y := 3*math.Sin(d.Cols[0][i]) + d.Cols[1][i]*d.Cols[1][i]
		if d.Cols[2][i] > 0.5 {
			y += 2
		}
		d.Label[i] = y + noise*rng.NormFloat64()
	}
	return d
}

// multiplicative draws y = exp(2·x0 + sin(3·x1) + [x2 > 0.5]) · e^N(0, noise²),
// x0, x1, x2 uniform in [0, 3), [−1, 1), [0, 1): a positive label spanning
// three orders of magnitude with relative noise, like a latency.
func multiplicative(n int, noise float64, seed uint64) Dataset {
	rng := rand.New(rand.NewPCG(seed, 13))
	d := Dataset{Cols: make([][]float64, 3), Label: make([]float64, n)}
	for f := range d.Cols {
		d.Cols[f] = make([]float64, n)
	}
	for i := range n {
		x0, x1, x2 := 3*rng.Float64(), 2*rng.Float64()-1, rng.Float64()
		d.Cols[0][i], d.Cols[1][i], d.Cols[2][i] = x0, x1, x2
		s := 2*x0 + math.Sin(3*x1)
		if x2 > 0.5 {
			s++
		}
		d.Label[i] = math.Exp(s + noise*rng.NormFloat64())
	}
	return d
}

// heteroscedastic draws y = 2·x0 + (0.1 + 2·x1)·N(0,1): the spread grows
// with x1, so a good p90 model must widen with x1.
func heteroscedastic(n int, seed uint64) Dataset {
	rng := rand.New(rand.NewPCG(seed, 11))
	d := Dataset{Names: []string{"x0", "x1", "x2"}, Cols: make([][]float64, 3), Label: make([]float64, n)}
	for f := range d.Cols {
		d.Cols[f] = make([]float64, n)
	}
	for i := range n {
		x0, x1, x2 := rng.Float64(), rng.Float64(), rng.Float64()
		d.Cols[0][i], d.Cols[1][i], d.Cols[2][i] = x0, x1, x2
		d.Label[i] = 2*x0 + (0.1+2*x1)*rng.NormFloat64()
	}
	return d
}

// row returns row i of d.
func (d Dataset) row(i int) []float64 {
	r := make([]float64, len(d.Cols))
	for f := range d.Cols {
		r[f] = d.Cols[f][i]
	}
	return r
}

func mustTrain(t testing.TB, d Dataset, p Params) *Model {
	t.Helper()
	m, err := Train(d, p)
	if err != nil {
		t.Fatalf("Train: %v", err)
	}
	return m
}

func modelText(t testing.TB, m *Model) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	return buf.Bytes()
}

// loadLeaves parses text with leaves, with its transformation for the gamma
// objective (exp of the trees' sum) and without for the others.
func loadLeaves(t testing.TB, text []byte) *leaves.Ensemble {
	t.Helper()
	gamma := bytes.Contains(text, []byte("\nobjective=gamma\n"))
	ens, err := leaves.LGEnsembleFromReader(bufio.NewReader(bytes.NewReader(text)), gamma)
	if err != nil {
		t.Fatalf("leaves.LGEnsembleFromReader: %v\n%s", err, head(text, 2000))
	}
	return ens
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// r2 is the coefficient of determination of m on d.
func r2(m *Model, d Dataset) float64 {
	mean := 0.0
	for _, y := range d.Label {
		mean += y
	}
	mean /= float64(len(d.Label))
	var ssRes, ssTot float64
	for i, y := range d.Label {
		e := y - m.Predict(d.row(i))
		ssRes += e * e
		ssTot += (y - mean) * (y - mean)
	}
	return 1 - ssRes/ssTot
}
