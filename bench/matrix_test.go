package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/internal/buildbin"
)

// matrixExamples builds the plugins the admission matrix launches into dir/bin/plugins, their
// versions stamped as make build stamps them, and copies the example configs it runs to
// dir/examples, so that their relative plugin paths resolve to the fresh binaries; it returns
// dir/examples.
func matrixExamples(t *testing.T, dir string) string {
	t.Helper()
	// Built as make go-build builds them: the configs' version constraints check their versions.
	if err := buildbin.PluginsInto("..", filepath.Join(dir, "bin", "plugins"), "admitter", "producer"); err != nil {
		t.Fatal(err)
	}
	for _, mc := range admissionConfigs {
		data, err := os.ReadFile(filepath.Join("..", "examples", mc.file))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "examples", mc.file)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "examples")
}

// TestMatrixIsDeterministic runs a small admission matrix twice: the same seeds give the same
// JSON, byte for byte, and it has every config, class and group.
func TestMatrixIsDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the admitter and producer plugins")
	}
	o := MatrixOptions{Matrix: "admission", Examples: matrixExamples(t, t.TempDir()), Preset: "llama-3.1-8b-h100-tp2",
		Servers: 2, Noise: 0.05, Requests: 150, Seed: 1, Seeds: 2, Saturation: 300}
	run := func() []byte {
		res, err := RunMatrix(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := run(), run()
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs with seeds 1 and 2 differ:\n%s\n%s", a, b)
	}
	var res MatrixResult
	if err := json.Unmarshal(a, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != len(admissionConfigs) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(admissionConfigs))
	}
	for _, row := range res.Rows {
		if len(row.Classes) != 4 || row.Classes[3].Class != "all" || row.Classes[3].Arrived != 2*150 {
			t.Errorf("%s: classes %+v, want critical, standard, sheddable and all with 300 arrivals", row.Config, row.Classes)
		}
		// A third of the requests visit the six groups, the others are one-off; a small run need
		// not meet every group, but one-offs come last, after the new group where there is one.
		groups := len(row.Groups)
		if groups < 3 || groups > 8 || row.Groups[groups-1].Group != "one-off" {
			t.Errorf("%s: groups %+v, want some of g1–g6 (and new), then one-off", row.Config, row.Groups)
		} else if row.NewGroup && row.Groups[groups-2].Group != "new" {
			t.Errorf("%s: groups %+v, want the new one before one-off", row.Config, row.Groups)
		}
	}
	if res.RateFleet != 1.2*300 || res.SaturationMeasured {
		t.Errorf("rate %v (saturation given: %v), want 360 from --saturation 300", res.RateFleet, !res.SaturationMeasured)
	}
}

func TestMatrixOptionErrors(t *testing.T) {
	tests := []struct {
		name    string
		o       MatrixOptions
		wantErr string
	}{
		{"unknown matrix", MatrixOptions{Matrix: "routing", Servers: 2}, `--matrix "routing": the one matrix is admission`},
		{"one seed", MatrixOptions{Matrix: "admission", Servers: 2, Seeds: 1}, "the matrix needs 2 to 20 seeds"},
		{"load above 2", MatrixOptions{Matrix: "admission", Servers: 2, Load: 3}, "--load must be one fraction"},
		{"few requests", MatrixOptions{Matrix: "admission", Servers: 2, Requests: 5}, "--requests must be at least 20"},
		{"bad class", MatrixOptions{Matrix: "admission", Servers: 2, Classes: []string{"x"}}, "--class: class \"x\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RunMatrix(context.Background(), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
