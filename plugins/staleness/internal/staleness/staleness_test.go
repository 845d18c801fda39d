package staleness

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func verdict(t *testing.T, f *Filter, ages ...float64) sdk.FilterVerdict {
	t.Helper()
	c := &sdk.Cycle{}
	for i, a := range ages {
		c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: string(rune('a' + i)), State: sdk.EndpointState{MetricsAgeMs: a}})
	}
	v, err := f.Filter(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestStaleEndpointsAreBlocked: older than the bound is blocked, at the bound is kept; all stale
// keeps all.
func TestStaleEndpointsAreBlocked(t *testing.T) {
	f := New()
	for _, c := range []struct {
		ages   []float64
		kept   []int
		reason string
	}{
		{[]float64{0, 40, 1000, 1001, 5000}, []int{0, 1, 2}, "3 of 5 fresh (≤ 1000 ms)"},
		{[]float64{10, 20}, []int{0, 1}, "all 2 fresh (≤ 1000 ms)"},
		{[]float64{2000, 3000}, []int{0, 1}, "all 2 stale (> 1000 ms): all kept, nothing fresher"},
	} {
		if v := verdict(t, f, c.ages...); !slices.Equal(v.Kept, c.kept) || v.Reason != c.reason {
			t.Errorf("ages %v: kept %v %q, want %v %q", c.ages, v.Kept, v.Reason, c.kept, c.reason)
		}
	}
	if err := f.Configure([]byte(`{"maxMetricsAgeMs":100}`)); err != nil {
		t.Fatal(err)
	}
	if v := verdict(t, f, 0, 150, 100); !slices.Equal(v.Kept, []int{0, 2}) {
		t.Errorf("at 100 ms: kept %v, want 0 and 2", v.Kept)
	}
}

func TestBadInput(t *testing.T) {
	f := New()
	for _, params := range []string{`{"maxMetricsAgeMs":0}`, `{"maxMetricsAgeMs":1e9}`} {
		if err := f.Configure([]byte(params)); err == nil || !strings.Contains(err.Error(), "maxMetricsAgeMs") {
			t.Errorf("%s: %v, want an error naming the parameter", params, err)
		}
	}
	if _, err := f.Filter(context.Background(), nil); err == nil {
		t.Error("nil cycle: want an error")
	}
}
