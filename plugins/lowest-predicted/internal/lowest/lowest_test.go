package lowest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func cycle(seed uint64, preds ...sdk.Prediction) *sdk.Cycle {
	c := &sdk.Cycle{Seed: seed}
	for i, p := range preds {
		c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: string(rune('a' + i)), Prediction: p})
	}
	return c
}

func pick(t *testing.T, p *Picker, c *sdk.Cycle) []int {
	t.Helper()
	order, err := p.Pick(context.Background(), c, make([]float64, len(c.Endpoints)))
	if err != nil {
		t.Fatal(err)
	}
	return order
}

// TestLowestFirst: by TTFT by default, by TPOT when asked; endpoints without the prediction last.
func TestLowestFirst(t *testing.T) {
	c := cycle(1,
		sdk.Prediction{Valid: true, TTFTMs: 300, TPOTMs: 10},
		sdk.Prediction{Valid: true, TTFTMs: 100, TPOTMs: 30},
		sdk.Prediction{}, // not valid
		sdk.Prediction{Valid: true, TTFTMs: 200, TPOTMs: 0}, // TPOT unknown
		sdk.Prediction{Valid: true, TTFTMs: 150, TPOTMs: 20},
	)
	p := New()
	if got := pick(t, p, c); !slices.Equal(got[:4], []int{1, 4, 3, 0}) || got[4] != 2 {
		t.Errorf("by TTFT: %v, want 1, 4, 3, 0, then the one without a prediction", got)
	}
	if err := p.Configure([]byte(`{"metric":"tpot"}`)); err != nil {
		t.Fatal(err)
	}
	got := pick(t, p, c)
	if !slices.Equal(got[:3], []int{0, 4, 1}) || !slices.Contains(got[3:], 2) || !slices.Contains(got[3:], 3) {
		t.Errorf("by TPOT: %v, want 0, 4, 1, then the two without a TPOT", got)
	}
}

// TestTiesAndColdShareTheLoad: equal predictions, and no prediction at all, are ordered at random
// by the cycle's seed: the same cycle gives the same order, and over seeds each endpoint comes
// first about as often.
func TestTiesAndColdShareTheLoad(t *testing.T) {
	p := New()
	for _, preds := range [][]sdk.Prediction{
		{{Valid: true, TTFTMs: 50}, {Valid: true, TTFTMs: 50}, {Valid: true, TTFTMs: 50}},
		{{}, {}, {}},
	} {
		first := make([]int, 3)
		for seed := range uint64(3000) {
			c := cycle(seed, preds...)
			order := pick(t, p, c)
			if again := pick(t, p, c); !slices.Equal(order, again) {
				t.Fatalf("seed %d: %v then %v for the same cycle", seed, order, again)
			}
			first[order[0]]++
		}
		for i, n := range first {
			if n < 900 || n > 1100 {
				t.Errorf("%v: endpoint %d first %d times of 3000, want about 1000", preds, i, n)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	p := New()
	if err := p.Configure([]byte(`{"metric":"e2e"}`)); err == nil || !strings.Contains(err.Error(), "metric") {
		t.Errorf("metric e2e: %v, want an error naming the parameter", err)
	}
	if _, err := p.Pick(context.Background(), cycle(1, sdk.Prediction{}), nil); err == nil {
		t.Error("no scores for one endpoint: want an error")
	}
	if _, err := p.Pick(context.Background(), nil, nil); err == nil {
		t.Error("nil cycle: want an error")
	}
}
