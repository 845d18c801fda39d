package threshold

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func filter(t *testing.T, f *Filter, slo sdk.SLO, preds ...sdk.Prediction) sdk.FilterVerdict {
	t.Helper()
	c := &sdk.Cycle{Request: sdk.Request{ID: "r", SLO: slo}}
	for i, p := range preds {
		c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: string(rune('a' + i)), Prediction: p})
	}
	v, err := f.Filter(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTheRules: each objective blocks the endpoints predicted over it times its threshold; an
// objective not set, a prediction not valid and a TPOT of 0 block nothing; none left is an empty
// verdict saying the bounds.
func TestTheRules(t *testing.T) {
	preds := []sdk.Prediction{
		{Valid: true, TTFTMs: 400, TPOTMs: 20}, // within both
		{Valid: true, TTFTMs: 600, TPOTMs: 20}, // over TTFT
		{Valid: true, TTFTMs: 400, TPOTMs: 60}, // over TPOT
		{Valid: true, TTFTMs: 500, TPOTMs: 0},  // TTFT exactly at the bound; TPOT unknown
		{TTFTMs: 9000, TPOTMs: 900},            // not valid: not judged
	}
	f := New()
	for _, c := range []struct {
		name   string
		params string
		slo    sdk.SLO
		kept   []int
		reason string
	}{
		{"both objectives", `{}`, sdk.SLO{TTFTMs: 500, TPOTMs: 50}, []int{0, 3, 4}, "3 of 5 predicted within TTFT ≤ 500 ms, TPOT ≤ 50 ms"},
		{"TTFT only", `{}`, sdk.SLO{TTFTMs: 500}, []int{0, 2, 3, 4}, "4 of 5 predicted within TTFT ≤ 500 ms"},
		{"TPOT only", `{}`, sdk.SLO{TPOTMs: 50}, []int{0, 1, 3, 4}, "4 of 5 predicted within TPOT ≤ 50 ms"},
		{"no SLO", `{}`, sdk.SLO{}, []int{0, 1, 2, 3, 4}, "no SLO: all kept"},
		{"a margin", `{"ttftThreshold":0.9}`, sdk.SLO{TTFTMs: 500}, []int{0, 2, 4}, "3 of 5 predicted within TTFT ≤ 450 ms"},
		{"a tolerance and a margin", `{"ttftThreshold":1.2,"tpotThreshold":0.8}`, sdk.SLO{TTFTMs: 500, TPOTMs: 50}, []int{0, 1, 3, 4}, "4 of 5 predicted within TTFT ≤ 600 ms, TPOT ≤ 40 ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := f.Configure([]byte(c.params)); err != nil {
				t.Fatal(err)
			}
			if v := filter(t, f, c.slo, preds...); !slices.Equal(v.Kept, c.kept) || v.Reason != c.reason {
				t.Errorf("kept %v %q, want %v %q", v.Kept, v.Reason, c.kept, c.reason)
			}
		})
	}
	if err := f.Configure([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	v := filter(t, f, sdk.SLO{TTFTMs: 100}, preds[:3]...)
	if len(v.Kept) != 0 || v.Reason != "no endpoint predicted within TTFT ≤ 100 ms" {
		t.Errorf("none within: kept %v %q", v.Kept, v.Reason)
	}
}

func TestBadInput(t *testing.T) {
	f := New()
	for _, params := range []string{`{"ttftThreshold":0}`, `{"tpotThreshold":11}`, `{"ttftThreshold":-1}`} {
		if err := f.Configure([]byte(params)); err == nil || !strings.Contains(err.Error(), "Threshold") {
			t.Errorf("%s: %v, want an error naming the threshold", params, err)
		}
	}
	if _, err := f.Filter(context.Background(), nil); err == nil {
		t.Error("nil cycle: want an error")
	}
}
