package builtin

import (
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestTypes(t *testing.T) {
	want := []string{
		"always-admit", "composite-scorer", "kv-cache-utilization-scorer", "max-score-picker",
		"predicted-saturation-detector", "prefix-cache-scorer", "queue-scorer", "round-robin-picker",
		"saturation-detector", "slo-order", "weighted-random-picker",
	}
	if got := Types(); !slices.Equal(got, want) {
		t.Errorf("Types() = %q, want %q", got, want)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		typ   string
		stage sdk.Stage
	}{
		{"round-robin-picker", sdk.StagePicker},
		{"max-score-picker", sdk.StagePicker},
		{"weighted-random-picker", sdk.StagePicker},
		{"queue-scorer", sdk.StageScorer},
		{"kv-cache-utilization-scorer", sdk.StageScorer},
		{"prefix-cache-scorer", sdk.StageScorer},
		{"composite-scorer", sdk.StageScorer},
		{"always-admit", sdk.StageAdmitter},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			p, stage, err := New(tt.typ)
			if err != nil {
				t.Fatalf("New(%q): %v", tt.typ, err)
			}
			if stage != tt.stage {
				t.Errorf("stage = %v, want %v", stage, tt.stage)
			}
			if p.Type() != tt.typ {
				t.Errorf("Type() = %q, want %q", p.Type(), tt.typ)
			}
			if p.Description() == "" {
				t.Error("Description() is empty")
			}
			var ok bool
			switch stage {
			case sdk.StagePicker:
				_, ok = p.(sdk.Picker)
			case sdk.StageScorer:
				_, ok = p.(sdk.Scorer)
			case sdk.StageAdmitter:
				_, ok = p.(sdk.Admitter)
			}
			if !ok {
				t.Errorf("%T does not implement the %v interface", p, stage)
			}
			for _, empty := range []string{``, `null`, `{}`} {
				if err := p.Configure([]byte(empty)); err != nil {
					t.Errorf("Configure(%q): %v", empty, err)
				}
			}
			if err := p.Configure([]byte(`{"bogus":1}`)); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
				t.Errorf("Configure with an unknown parameter: error = %v, want one naming \"bogus\"", err)
			}
		})
	}
}

func TestNewUnknownType(t *testing.T) {
	_, stage, err := New("least-load-picker")
	if err == nil {
		t.Fatal("New(unknown) succeeded")
	}
	if stage != sdk.StageUnspecified {
		t.Errorf("stage = %v, want unspecified", stage)
	}
	for _, want := range append([]string{`"least-load-picker"`}, Types()...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestNewReturnsFreshInstances(t *testing.T) {
	// Two round-robin pickers keep separate counters: both start at index 0.
	a, _, _ := New(RoundRobinPickerType)
	b, _, _ := New(RoundRobinPickerType)
	c := cycle(3, 0)
	first, _ := a.(sdk.Picker).Pick(t.Context(), c, make([]float64, 3))
	second, _ := b.(sdk.Picker).Pick(t.Context(), c, make([]float64, 3))
	if first[0] != 0 || second[0] != 0 {
		t.Errorf("first picks of two instances start at %d and %d, want 0 and 0", first[0], second[0])
	}
}

// cycle returns a cycle of n endpoints with the given seed.
func cycle(n int, seed uint64) *sdk.Cycle {
	return &sdk.Cycle{Seed: seed, Endpoints: make([]sdk.Endpoint, n)}
}
