package engine

import (
	"math"
	"math/rand/v2"
)

// noise draws the multiplicative step-time factors. It is a value (PCG state plus constants), so
// copying a Batch copies the stream position: a clone fed the same inputs draws the same factors.
type noise struct {
	pcg   rand.PCG
	sigma float64 // of the underlying normal
	mu    float64
}

// newNoise returns factors with mean 1 and coefficient of variation cv: a lognormal with
// σ² = ln(1+cv²) and μ = −σ²/2.
func newNoise(cv float64, seed uint64) noise {
	n := noise{pcg: *rand.NewPCG(seed, 0x666f726573696768)} // "foresigh"
	if cv > 0 {
		v := math.Log1p(cv * cv)
		n.sigma, n.mu = math.Sqrt(v), -v/2
	}
	return n
}

// factor returns the next factor (1 when noise is off, without drawing).
func (n *noise) factor() float64 {
	if n.sigma == 0 {
		return 1
	}
	return math.Exp(n.mu + n.sigma*n.normal())
}

// normal draws a standard normal by Box–Muller, using one of the pair.
func (n *noise) normal() float64 {
	u1 := (float64(n.pcg.Uint64()>>11) + 1) / (1 << 53) // (0, 1]
	u2 := float64(n.pcg.Uint64()>>11) / (1 << 53)       // [0, 1)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}
