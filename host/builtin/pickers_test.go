package builtin

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestRoundRobinPicker(t *testing.T) {
	p := NewRoundRobinPicker()
	tests := []struct {
		name string
		n    int
		want []int
	}{
		// The k-th Pick (from 0) starts at k mod n.
		{name: "pick 0 of 3", n: 3, want: []int{0, 1, 2}},       // 0 mod 3 = 0
		{name: "pick 1 of 3", n: 3, want: []int{1, 2, 0}},       // 1 mod 3 = 1
		{name: "pick 2 of 3", n: 3, want: []int{2, 0, 1}},       // 2 mod 3 = 2
		{name: "pick 3 of 3", n: 3, want: []int{0, 1, 2}},       // 3 mod 3 = 0: wrapped
		{name: "pick 4 of 2", n: 2, want: []int{0, 1}},          // 4 mod 2 = 0
		{name: "pick 5 of 4", n: 4, want: []int{1, 2, 3, 0}},    // 5 mod 4 = 1
		{name: "pick 6 of 0", n: 0, want: []int{}},              // empty, but the counter advances
		{name: "pick 7 of 5", n: 5, want: []int{2, 3, 4, 0, 1}}, // 7 mod 5 = 2
	}
	for _, tt := range tests { // in order: each case is the next Pick of the same picker
		got, err := p.Pick(t.Context(), cycle(tt.n, 1), make([]float64, tt.n))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: order %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRoundRobinPickerRotatesEachHopOnItsOwn(t *testing.T) {
	p := NewRoundRobinPicker()
	// A disaggregated request's decode decision, then its prefill decision, twice over: each hop
	// starts at 0 and moves on by one, as if the other's picks were not there.
	var starts []int
	for range 2 {
		for _, hop := range []sdk.Hop{sdk.HopDecode, sdk.HopPrefill} {
			c := cycle(2, 1)
			c.Request.Disaggregation.Hop = hop
			got, err := p.Pick(t.Context(), c, make([]float64, 2))
			if err != nil {
				t.Fatal(err)
			}
			starts = append(starts, got[0])
		}
	}
	if !slices.Equal(starts, []int{0, 0, 1, 1}) {
		t.Errorf("starts %v, want each hop's 0 then 1", starts)
	}
}

func TestRoundRobinPickerConcurrent(t *testing.T) {
	// 300 concurrent Picks over 3 endpoints: the counter advances once per Pick, so every start
	// index is used exactly 300/3 = 100 times.
	p := NewRoundRobinPicker()
	var mu sync.Mutex
	starts := map[int]int{}
	var wg sync.WaitGroup
	for range 300 {
		wg.Go(func() {
			got, err := p.Pick(t.Context(), cycle(3, 0), make([]float64, 3))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			starts[got[0]]++
			mu.Unlock()
		})
	}
	wg.Wait()
	for i := range 3 {
		if starts[i] != 100 {
			t.Errorf("start %d used %d times, want 100 (all: %v)", i, starts[i], starts)
		}
	}
}

func TestMaxScorePicker(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		scores []float64
		want   []int
	}{
		{name: "distinct", scores: []float64{0.2, 0.9, 0.5}, want: []int{1, 2, 0}},             // 0.9 > 0.5 > 0.2
		{name: "weighted sums above 1", scores: []float64{1.5, 2.25, 0}, want: []int{1, 0, 2}}, // 2.25 > 1.5 > 0
		{name: "NaN last", scores: []float64{nan, 0, 0.3}, want: []int{2, 1, 0}},               // 0.3 > 0 > NaN
		{name: "negative", scores: []float64{-1, -0.5}, want: []int{1, 0}},                     // -0.5 > -1
		{name: "one", scores: []float64{0.4}, want: []int{0}},
		{name: "none", scores: []float64{}, want: []int{}},
	}
	p := NewMaxScorePicker()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(20) {
				got, err := p.Pick(t.Context(), cycle(len(tt.scores), seed), tt.scores)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, tt.want) {
					t.Fatalf("seed %d: order %v, want %v", seed, got, tt.want)
				}
			}
		})
	}
}

func TestMaxScorePickerSpreadsTies(t *testing.T) {
	// Indices 0, 2 and 3 tie at 0.9 and 1 trails at 0.3: over 3,000 seeds each tied index should
	// come first about 3000/3 = 1000 times (standard deviation √(3000·⅓·⅔) ≈ 26), and 1 always last.
	p := NewMaxScorePicker()
	scores := []float64{0.9, 0.3, 0.9, 0.9}
	firsts := map[int]int{}
	for seed := range uint64(3000) {
		got, err := p.Pick(t.Context(), cycle(4, seed), scores)
		if err != nil {
			t.Fatal(err)
		}
		if got[3] != 1 {
			t.Fatalf("seed %d: order %v, want index 1 last", seed, got)
		}
		again, _ := p.Pick(t.Context(), cycle(4, seed), scores)
		if !slices.Equal(got, again) {
			t.Fatalf("seed %d: %v then %v, want the same order for the same cycle", seed, got, again)
		}
		firsts[got[0]]++
	}
	for _, i := range []int{0, 2, 3} {
		if firsts[i] < 900 || firsts[i] > 1100 {
			t.Errorf("index %d first %d times, want 1000 ± 100 (all: %v)", i, firsts[i], firsts)
		}
	}
}

func TestPickerErrors(t *testing.T) {
	tests := []struct {
		name    string
		cycle   *sdk.Cycle
		scores  []float64
		wantErr string
	}{
		{name: "fewer scores", cycle: cycle(3, 0), scores: []float64{1}, wantErr: "got 1 scores for 3 endpoints"},
		{name: "more scores", cycle: cycle(0, 0), scores: []float64{1}, wantErr: "got 1 scores for 0 endpoints"},
		{name: "nil cycle", cycle: nil, wantErr: "nil cycle"},
	}
	for _, picker := range []sdk.Picker{NewRoundRobinPicker(), NewMaxScorePicker()} {
		for _, tt := range tests {
			t.Run(picker.Type()+"/"+tt.name, func(t *testing.T) {
				_, err := picker.Pick(t.Context(), tt.cycle, tt.scores)
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
			})
		}
	}
}
