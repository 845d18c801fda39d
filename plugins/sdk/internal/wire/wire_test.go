package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOptionalColumn: the whole column as soon as one entry is not zero (the zeros before it
// included), nothing when every entry is zero or there are no endpoints.
func TestOptionalColumn(t *testing.T) {
	tests := []struct {
		name    string
		entries []float64
		want    []float64
	}{
		{"no endpoints", nil, nil},
		{"all zero", []float64{0, 0, 0}, nil},
		{"first", []float64{0.5, 0, 0}, []float64{0.5, 0, 0}},
		{"last", []float64{0, 0, 0.25}, []float64{0, 0, 0.25}},
		{"several", []float64{0, 1.5, 0, 2}, []float64{0, 1.5, 0, 2}},
		{"negative", []float64{0, -3}, []float64{0, -3}},
	}
	for _, tt := range tests {
		got := OptionalColumn(len(tt.entries), func(i int) float64 { return tt.entries[i] })
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tt.name, diff)
		}
		if tt.want == nil && got != nil {
			t.Errorf("%s: got an empty column %v, want none (nil)", tt.name, got)
		}
	}
}
