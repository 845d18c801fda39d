package prior

import "math"

// fit is a linear model y ≈ β·x with β ≥ 0, fitted by weighted least squares on normal
// equations that forget: every new row first scales the old ones by decay, so a row's weight
// halves every ln 2 / −ln decay rows and the fit follows an engine whose speed changes. The
// weight of a row is 1/y², so the fit minimises the squared relative error, the error the
// producer is judged by, and a 20 ms request counts as much as a 20 s one.
//
// Until minSupport rows have excited a term (made it non-zero), its value in a prediction is held
// to the largest the data has shown it: the first row that excites a term is fitted exactly by
// it, whatever made that row slow, and a linear term extrapolates that without bound. On a batch
// engine stalled by a long prompt another router sent, the first sample with a queue (2 waiting,
// 2 s) gave the queue term 540 ms a waiting request, and the next endpoint with 35 waiting a
// prediction of 20 s for a 15 ms TTFT (bench routing --replicas 8, production, 2026-11-25); held
// to 2 waiting, it predicts the 2 s that sample saw. The support is an effective number of rows,
// (Σ d)² / Σ d² over the exciting rows' forgetting weights d, so forgetting alone does not make
// a term that rows excited long ago unsupported again (they still determine its coefficient).
type fit struct {
	k          int
	decay      float64
	minSupport float64
	a          []float64 // k×k: Σ w·x·xᵀ, row-major
	b          []float64 // k: Σ w·x·y
	s1, s2     []float64 // k: Σ d and Σ d² over the rows that excite each term
	top        []float64 // k: the largest value of each term in a row
}

func newFit(k int, decay, minSupport float64) *fit {
	return &fit{k: k, decay: decay, minSupport: minSupport, a: make([]float64, k*k), b: make([]float64, k),
		s1: make([]float64, k), s2: make([]float64, k), top: make([]float64, k)}
}

// support is the effective number of rows that excited term j.
func (f *fit) support(j int) float64 {
	if f.s2[j] <= 0 {
		return 0
	}
	return f.s1[j] * f.s1[j] / f.s2[j]
}

// limits returns the most each term may count in a prediction: the largest value the rows showed
// while fewer than minSupport rows excited it, no limit (+Inf) after.
func (f *fit) limits() []float64 {
	l := make([]float64, f.k)
	for j := range l {
		l[j] = math.Inf(1)
		if math.Round(f.support(j)) < f.minSupport {
			l[j] = f.top[j]
		}
	}
	return l
}

// add files one row x with target y > 0.
func (f *fit) add(x []float64, y float64) {
	w := 1 / (y * y)
	for i := range f.a {
		f.a[i] *= f.decay
	}
	for i := range f.b {
		f.b[i] *= f.decay
	}
	for i := 0; i < f.k; i++ {
		f.s1[i] *= f.decay
		f.s2[i] *= f.decay * f.decay
		if x[i] != 0 {
			f.s1[i]++
			f.s2[i]++
			f.top[i] = max(f.top[i], x[i])
		}
	}
	for i := 0; i < f.k; i++ {
		wi := w * x[i]
		f.b[i] += wi * y
		row := f.a[i*f.k : (i+1)*f.k]
		for j := 0; j < f.k; j++ {
			row[j] += wi * x[j]
		}
	}
}

// ridge is added to every diagonal element of the scaled normal equations (whose diagonal is 1):
// enough to keep them solvable when two terms move together in the data so far, too little to
// bias a term the data determines.
const ridge = 1e-9

// solve returns the non-negative least-squares coefficients, by Lawson and Hanson's active-set
// method on the normal equations, scaled to a unit diagonal so that terms of different sizes (a
// count, tens of thousands of tokens) are solved alike. Non-negative because every term is a
// load or a size that can only add latency; it also keeps the model monotone, so it extrapolates
// upward where the load goes beyond what it has seen, not wherever a noisy negative coefficient
// points. A term the data has not moved yet (an all-zero column) stays at 0.
func (f *fit) solve() []float64 {
	k := f.k
	d := make([]float64, k) // the scale of each term
	var live []int
	for j := range k {
		if v := f.a[j*k+j]; v > 0 {
			d[j] = math.Sqrt(v)
			live = append(live, j)
		}
	}
	a := func(i, j int) float64 { return f.a[i*k+j] / (d[i] * d[j]) }
	b := func(i int) float64 { return f.b[i] / d[i] }
	beta := make([]float64, k) // scaled
	passive := make([]bool, k)
	grad := func(j int) float64 { // b − Aβ, the direction that lowers the error
		g := b(j)
		for _, i := range live {
			g -= a(j, i) * beta[i]
		}
		return g
	}
	for outer := 0; outer < 3*k; outer++ {
		best, bestG := -1, 1e-12
		for _, j := range live {
			if g := grad(j); !passive[j] && g > bestG {
				best, bestG = j, g
			}
		}
		if best < 0 {
			break
		}
		passive[best] = true
		for inner := 0; inner < 3*k; inner++ {
			z := solvePassive(k, live, passive, a, b)
			alpha, step := 1.0, false
			for _, j := range live {
				if passive[j] && z[j] <= 0 {
					if r := beta[j] / (beta[j] - z[j]); r < alpha {
						alpha = r
					}
					step = true
				}
			}
			if !step {
				copy(beta, z)
				break
			}
			for _, j := range live {
				beta[j] += alpha * (z[j] - beta[j])
				if passive[j] && beta[j] <= 1e-15 {
					passive[j], beta[j] = false, 0
				}
			}
		}
	}
	for _, j := range live {
		beta[j] /= d[j]
	}
	return beta
}

// solvePassive solves the scaled normal equations restricted to the passive terms (the others
// at 0), by Gaussian elimination with partial pivoting.
func solvePassive(k int, live []int, passive []bool, a func(i, j int) float64, b func(int) float64) []float64 {
	var idx []int
	for _, j := range live {
		if passive[j] {
			idx = append(idx, j)
		}
	}
	n := len(idx)
	m := make([]float64, n*(n+1))
	for r, i := range idx {
		for c, j := range idx {
			m[r*(n+1)+c] = a(i, j)
		}
		m[r*(n+1)+r] += ridge
		m[r*(n+1)+n] = b(i)
	}
	for c := range n {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r*(n+1)+c]) > math.Abs(m[piv*(n+1)+c]) {
				piv = r
			}
		}
		for x := range n + 1 {
			m[c*(n+1)+x], m[piv*(n+1)+x] = m[piv*(n+1)+x], m[c*(n+1)+x]
		}
		p := m[c*(n+1)+c]
		if p == 0 {
			continue
		}
		for r := range n {
			if r == c {
				continue
			}
			q := m[r*(n+1)+c] / p
			for x := c; x <= n; x++ {
				m[r*(n+1)+x] -= q * m[c*(n+1)+x]
			}
		}
	}
	z := make([]float64, k)
	for r, j := range idx {
		if p := m[r*(n+1)+r]; p != 0 {
			z[j] = m[r*(n+1)+n] / p
		}
	}
	return z
}

// predict is β·x, each term held to its limit (nil: none).
func predict(beta, x, limit []float64) float64 {
	s := 0.0
	for i, b := range beta {
		v := x[i]
		if limit != nil {
			v = min(v, limit[i])
		}
		s += b * v
	}
	return s
}
