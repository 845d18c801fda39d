package pickpolicy

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// seeds is how many cycles each distribution test draws; at 20,000 draws the standard error of a
// rate is at most √(0.25/20000) ≈ 0.0035, so the tolerance below is over four standard errors.
const (
	seeds     = 20000
	tolerance = 0.015
)

var nan, inf = math.NaN(), math.Inf(1)

// cycle returns a cycle of n endpoints named e0, e1, … with the given seed.
func cycle(n int, seed uint64) *sdk.Cycle {
	c := &sdk.Cycle{Seed: seed, Endpoints: make([]sdk.Endpoint, n)}
	for i := range c.Endpoints {
		c.Endpoints[i].ID = fmt.Sprintf("e%d", i)
	}
	return c
}

// configured returns a picker configured with params, failing the test on error.
func configured(t testing.TB, params string) *Picker {
	t.Helper()
	p := New()
	if err := p.Configure([]byte(params)); err != nil {
		t.Fatalf("Configure(%s): %v", params, err)
	}
	return p
}

// pick returns the order for one seed, failing the test unless it is a permutation of the indices.
func pick(t testing.TB, p *Picker, scores []float64, seed uint64) []int {
	t.Helper()
	return pickIn(t, p, cycle(len(scores), seed), scores)
}

// pickIn returns the order for cycle c, failing the test unless it is a permutation of the indices.
func pickIn(t testing.TB, p *Picker, c *sdk.Cycle, scores []float64) []int {
	t.Helper()
	seed := c.Seed
	got, err := p.Pick(context.Background(), c, scores)
	if err != nil {
		t.Fatalf("Pick(seed %d): %v", seed, err)
	}
	if len(got) != len(scores) {
		t.Fatalf("Pick(seed %d) returned %d indices for %d endpoints", seed, len(got), len(scores))
	}
	seen := make([]bool, len(got))
	for _, v := range got {
		if v < 0 || v >= len(got) || seen[v] {
			t.Fatalf("Pick(seed %d) = %v, not a permutation of 0..%d", seed, got, len(scores)-1)
		}
		seen[v] = true
	}
	return got
}

// rates returns, over cycles seeded 0..n-1, how often each index lands at position pos of the order.
func rates(t testing.TB, p *Picker, scores []float64, pos, n int) []float64 {
	t.Helper()
	counts := make([]float64, len(scores))
	c := cycle(len(scores), 0)
	for seed := range uint64(n) {
		c.Seed = seed
		counts[pickIn(t, p, c, scores)[pos]]++
	}
	for i := range counts {
		counts[i] /= float64(n)
	}
	return counts
}

// checkRates fails the test when any rate differs from want by more than tolerance.
func checkRates(t *testing.T, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > tolerance {
			t.Errorf("index %d: rate %.4f, want %.4f ± %.3f (all: %.4f)", i, got[i], want[i], tolerance, got)
		}
	}
}

func TestPickFirstDistribution(t *testing.T) {
	tests := []struct {
		name   string
		params string
		scores []float64
		want   []float64 // P(first = i)
	}{
		{
			name: "proportional, scores summing to 1", params: `{"strategy":"proportional"}`,
			// s_i/Σs with Σs = 1.
			scores: []float64{0.1, 0.2, 0.3, 0.4}, want: []float64{0.1, 0.2, 0.3, 0.4},
		},
		{
			name: "proportional, weighted scores above 1", params: `{"strategy":"proportional"}`,
			// Σs = 6: 1/6, 2/6, 3/6.
			scores: []float64{1, 2, 3}, want: []float64{1.0 / 6, 2.0 / 6, 3.0 / 6},
		},
		{
			name: "proportional, zero, negative and NaN scores never first", params: `{"strategy":"proportional"}`,
			// Only 0.5 and 1.5 have weight: Σ = 2, so 0.25 and 0.75.
			scores: []float64{0, 0.5, -1, nan, 1.5}, want: []float64{0, 0.25, 0, 0, 0.75},
		},
		{
			name: "proportional, all zero is uniform", params: `{"strategy":"proportional"}`,
			// No weight anywhere: every order equally likely, 1/4 each.
			scores: []float64{0, 0, 0, 0}, want: []float64{0.25, 0.25, 0.25, 0.25},
		},
		{
			name: "proportional, all at most zero is uniform", params: `{"strategy":"proportional"}`,
			scores: []float64{-1, 0, nan, -0.5}, want: []float64{0.25, 0.25, 0.25, 0.25},
		},
		{
			name: "softmax, default temperature 0.1", params: `{"strategy":"softmax"}`,
			// (s − 0.9)/0.1 = −7, −4, −3, 0 → e^x = 0.000912, 0.018316, 0.049787, 1; Σ = 1.069015.
			scores: []float64{0.2, 0.5, 0.6, 0.9}, want: []float64{0.000853, 0.017133, 0.046573, 0.935441},
		},
		{
			name: "softmax, temperature 0.25", params: `{"strategy":"softmax","temperature":0.25}`,
			// (s − 0.9)/0.25 = −2.8, −1.6, −1.2, 0 → 0.060810, 0.201897, 0.301194, 1; Σ = 1.563901.
			scores: []float64{0.2, 0.5, 0.6, 0.9}, want: []float64{0.038884, 0.129098, 0.192592, 0.639427},
		},
		{
			name: "softmax, temperature 100 is nearly uniform", params: `{"strategy":"softmax","temperature":100}`,
			// (s − 0.9)/100 = −0.007, −0.004, −0.003, 0 → 0.993024, 0.996008, 0.997004, 1; Σ = 3.986037.
			scores: []float64{0.2, 0.5, 0.6, 0.9}, want: []float64{0.249126, 0.249874, 0.250124, 0.250876},
		},
		{
			name: "softmax, all equal is uniform", params: `{"strategy":"softmax"}`,
			// Equal scores weigh e^0 = 1 each: an idle fleet is not filled from its first endpoint.
			scores: []float64{0.7, 0.7, 0.7, 0.7}, want: []float64{0.25, 0.25, 0.25, 0.25},
		},
		{
			name: "softmax, NaN never first", params: `{"strategy":"softmax","temperature":1}`,
			// NaN has weight 0; (s − 1)/1 = −1, 0 → e^−1 = 0.367879, 1; Σ = 1.367879.
			scores: []float64{0, nan, 1}, want: []float64{0.268941, 0, 0.731059},
		},
		{
			name: "argmax, two-way tie split evenly", params: `{"strategy":"argmax"}`,
			scores: []float64{0.3, 0.9, 0.9, 0.1}, want: []float64{0, 0.5, 0.5, 0},
		},
		{
			name: "argmax, all equal is uniform", params: `{"strategy":"argmax"}`,
			scores: []float64{0.4, 0.4, 0.4, 0.4}, want: []float64{0.25, 0.25, 0.25, 0.25},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRates(t, rates(t, configured(t, tt.params), tt.scores, 0, seeds), tt.want)
		})
	}
}

func TestPickSecondPosition(t *testing.T) {
	// A full weighted permutation draws the second from what is left:
	// P(second = j) = Σ_{i≠j} P(first = i) · s_j / (Σs − s_i), with scores 1, 2, 3 (Σ = 6):
	//   j=0: (2/6)(1/4) + (3/6)(1/3) = 1/12 + 1/6 = 0.25
	//   j=1: (1/6)(2/5) + (3/6)(2/3) = 1/15 + 1/3 = 0.4
	//   j=2: (1/6)(3/5) + (2/6)(3/4) = 1/10 + 1/4 = 0.35
	checkRates(t, rates(t, configured(t, `{"strategy":"proportional"}`), []float64{1, 2, 3}, 1, seeds), []float64{0.25, 0.4, 0.35})
}

func TestPickZeroWeightLastInRandomOrder(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		scores  []float64
		head    []int // the indices that fill the first len(head) positions, in any order
		tailPos int   // a position inside the tail, which must be uniform over the tail
	}{
		{
			name: "proportional", params: `{"strategy":"proportional"}`,
			scores: []float64{0, 0.5, -1, nan, 0.5, inf}, head: []int{1, 4}, tailPos: 2,
		},
		{
			name: "softmax", params: `{"strategy":"softmax"}`,
			// Every finite score has weight under softmax, so only NaN and +Inf are in the tail.
			scores: []float64{nan, 0.2, inf, 0.9}, head: []int{1, 3}, tailPos: 2,
		},
		{
			name: "argmax", params: `{"strategy":"argmax"}`,
			scores: []float64{nan, 0.2, inf, 0.9, math.Inf(-1)}, head: []int{3, 1}, tailPos: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := configured(t, tt.params)
			tail := len(tt.scores) - len(tt.head)
			counts := map[int]float64{}
			for seed := range uint64(seeds) {
				got := pick(t, p, tt.scores, seed)
				if h := slices.Sorted(slices.Values(got[:len(tt.head)])); !slices.Equal(h, slices.Sorted(slices.Values(tt.head))) {
					t.Fatalf("seed %d: order %v, want %v first", seed, got, tt.head)
				}
				counts[got[tt.tailPos]]++
			}
			// Each of the tail's endpoints should sit at tailPos 1/tail of the time.
			for i, c := range counts {
				if math.Abs(c/seeds-1/float64(tail)) > tolerance {
					t.Errorf("index %d at position %d: rate %.4f, want %.4f", i, tt.tailPos, c/seeds, 1/float64(tail))
				}
			}
		})
	}
}

func TestPickArgmaxOrder(t *testing.T) {
	p := configured(t, `{"strategy":"argmax"}`)
	scores := []float64{0.2, 0.9, 0.5, 0.7}
	for seed := range uint64(100) {
		// 0.9 > 0.7 > 0.5 > 0.2 whatever the seed.
		if got, want := pick(t, p, scores, seed), []int{1, 3, 2, 0}; !slices.Equal(got, want) {
			t.Fatalf("seed %d: order %v, want %v", seed, got, want)
		}
	}
}

func TestPickDeterministic(t *testing.T) {
	scores := []float64{0.5, 0.5, 0.5, 0.2, 0.9, 0.9, 0, 0.7}
	for _, strategy := range []string{StrategyProportional, StrategySoftmax, StrategyArgmax} {
		t.Run(strategy, func(t *testing.T) {
			p := configured(t, `{"strategy":"`+strategy+`"}`)
			distinct := map[string]bool{}
			for seed := range uint64(100) {
				a, b := pick(t, p, scores, seed), pick(t, p, scores, seed)
				if !slices.Equal(a, b) {
					t.Fatalf("seed %d: two picks differ: %v and %v", seed, a, b)
				}
				distinct[fmt.Sprint(a)] = true
			}
			if len(distinct) < 2 {
				t.Errorf("100 seeds gave a single order; the seed is not used")
			}
		})
	}
}

func TestPickSizes(t *testing.T) {
	for _, strategy := range []string{StrategyProportional, StrategySoftmax, StrategyArgmax} {
		for _, n := range []int{0, 1, 2, 100} {
			t.Run(fmt.Sprintf("%s/%d", strategy, n), func(t *testing.T) {
				p := configured(t, `{"strategy":"`+strategy+`"}`)
				scores := make([]float64, n)
				for i := range scores {
					scores[i] = float64(i%7) / 6
				}
				pick(t, p, scores, 42) // checks the permutation
			})
		}
	}
}

func TestPickErrors(t *testing.T) {
	tests := []struct {
		name    string
		cycle   *sdk.Cycle
		scores  []float64
		wantErr string
	}{
		{name: "fewer scores than endpoints", cycle: cycle(3, 1), scores: []float64{1, 2}, wantErr: "got 2 scores for 3 endpoints"},
		{name: "more scores than endpoints", cycle: cycle(1, 1), scores: []float64{1, 2}, wantErr: "got 2 scores for 1 endpoints"},
		{name: "nil scores", cycle: cycle(2, 1), scores: nil, wantErr: "got 0 scores for 2 endpoints"},
		{name: "nil cycle", cycle: nil, scores: nil, wantErr: "nil cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New().Pick(context.Background(), tt.cycle, tt.scores)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Pick error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestBestPickRate measures how often the best of 10 spread scores is picked first: the README
// quotes these figures. The proportional rows draw 100,000 cycles (standard error ≈ 0.0012) for a
// sharper figure than the other tests' 20,000.
func TestBestPickRate(t *testing.T) {
	tenth := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}
	ninth := make([]float64, 10)
	for i := range ninth {
		ninth[i] = float64(i) / 9
	}
	tests := []struct {
		name   string
		params string
		scores []float64
		cycles int
		want   float64
		tol    float64
	}{
		// 1.0 / (0.1 + … + 1.0) = 1 / 5.5 ≈ 0.1818.
		{name: "proportional, 0.1..1.0", params: `{"strategy":"proportional"}`, scores: tenth, cycles: 100000, want: 1 / 5.5, tol: 0.006},
		// 1 / (0 + 1/9 + … + 9/9) = 1 / 5 = 0.2.
		{name: "proportional, 0..1 in ninths", params: `{"strategy":"proportional"}`, scores: ninth, cycles: 100000, want: 0.2, tol: 0.006},
		// 1 / Σ_{k=0..9} e^−k = (1 − e^−1) / (1 − e^−10) ≈ 0.6321.
		{name: "softmax 0.1, 0.1..1.0", params: `{"strategy":"softmax"}`, scores: tenth, cycles: seeds,
			want: (1 - math.Exp(-1)) / (1 - math.Exp(-10)), tol: tolerance},
		{name: "argmax, 0.1..1.0", params: `{"strategy":"argmax"}`, scores: tenth, cycles: seeds, want: 1, tol: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rates(t, configured(t, tt.params), tt.scores, 0, tt.cycles)[9]
			t.Logf("best picked first in %.4f of %d cycles (expected %.4f)", got, tt.cycles, tt.want)
			if math.Abs(got-tt.want) > tt.tol {
				t.Errorf("best-pick rate %.4f, want %.4f ± %.3f", got, tt.want, tt.tol)
			}
		})
	}
}

func BenchmarkPick100(b *testing.B) {
	scores := make([]float64, 100)
	for i := range scores {
		scores[i] = float64((i*37)%100) / 100
	}
	for _, strategy := range []string{StrategyProportional, StrategySoftmax, StrategyArgmax} {
		b.Run(strategy, func(b *testing.B) {
			p := configured(b, `{"strategy":"`+strategy+`"}`)
			c := cycle(len(scores), 0)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				c.Seed++
				if _, err := p.Pick(ctx, c, scores); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
