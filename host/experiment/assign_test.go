package experiment

import (
	"fmt"
	"math"
	"testing"
)

func TestAssignSticky(t *testing.T) {
	weights := []float64{0.5, 0.3, 0.2}
	for i := range 1000 {
		key := fmt.Sprintf("session-%d", i)
		first := Assign(key, weights)
		for range 3 {
			if got := Assign(key, []float64{0.5, 0.3, 0.2}); got != first {
				t.Fatalf("Assign(%q) = %d, earlier %d", key, got, first)
			}
		}
	}
}

// The hash is part of the contract: these values change only if sessions move between arms.
func TestUnitGolden(t *testing.T) {
	for key, want := range map[string]float64{
		"":           0.93676944839043996,
		"session-42": 0.24385056740836264,
	} {
		if got := unit(key); got != want {
			t.Errorf("unit(%q) = %.17g, want %.17g", key, got, want)
		}
	}
}

func TestAssignSplit(t *testing.T) {
	const n = 100000
	for _, weights := range [][]float64{
		{0.7, 0.2, 0.1},
		{3, 1}, // weights need not sum to 1
		{1, 1, 1, 1},
	} {
		total := 0.0
		for _, w := range weights {
			total += w
		}
		counts := make([]int, len(weights))
		for i := range n {
			counts[Assign(fmt.Sprintf("req-%d", i), weights)]++
		}
		for i, c := range counts {
			got, want := float64(c)/n, weights[i]/total
			if math.Abs(got-want) > 0.01 {
				t.Errorf("weights %v: arm %d got %.4f of keys, want %.4f ± 0.01", weights, i, got, want)
			}
		}
	}
}

// Keys that differ only in their last byte must not all land on one arm (raw FNV-1a's high bits
// hardly move for them).
func TestAssignNeighbouringKeys(t *testing.T) {
	seen := map[int]int{}
	for i := range 10 {
		seen[Assign(fmt.Sprintf("session-%d", i), []float64{1, 1})]++
	}
	if seen[0] == 0 || seen[1] == 0 {
		t.Errorf("session-0..9 split %v, want both arms used", seen)
	}
}

func TestAssignZeroWeightNeverChosen(t *testing.T) {
	weights := []float64{0, 1, 0, 2, 0}
	counts := make([]int, len(weights))
	for i := range 100000 {
		counts[Assign(fmt.Sprintf("k%d", i), weights)]++
	}
	for _, i := range []int{0, 2, 4} {
		if counts[i] != 0 {
			t.Errorf("arm %d of weight 0 chosen %d times", i, counts[i])
		}
	}
	if counts[1] == 0 || counts[3] == 0 {
		t.Errorf("counts %v, want arms 1 and 3 both chosen", counts)
	}
}

func TestAssignSingleArm(t *testing.T) {
	for i := range 1000 {
		key := fmt.Sprintf("k%d", i)
		if got := Assign(key, []float64{5}); got != 0 {
			t.Fatalf("Assign(%q, [5]) = %d, want 0", key, got)
		}
		if got := Assign(key, []float64{0, 0, 1}); got != 2 {
			t.Fatalf("Assign(%q, [0 0 1]) = %d, want 2", key, got)
		}
	}
}

func TestAssignUnusableWeights(t *testing.T) {
	for _, tc := range []struct {
		weights []float64
		want    int
	}{
		{nil, 0},
		{[]float64{0, 0}, 0},
		{[]float64{-1, math.NaN(), math.Inf(1), 1}, 3},
	} {
		if got := Assign("session-42", tc.weights); got != tc.want {
			t.Errorf("Assign(session-42, %v) = %d, want %d", tc.weights, got, tc.want)
		}
	}
}
