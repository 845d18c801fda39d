package gbdt

import (
	"math"
	"strings"
	"testing"
)

func TestDefaultParamsValid(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesEveryBadField(t *testing.T) {
	p := Params{
		Trees: 0, MaxDepth: -1, NumLeaves: 1, LearningRate: math.NaN(), Lambda: -1,
		MinChildWeight: math.Inf(1), MinSamplesLeaf: 0, Subsample: 1.5, MaxBins: 256,
		Loss: Quantile, Alpha: 1,
	}
	err := p.Validate()
	if err == nil {
		t.Fatal("Validate accepted invalid params")
	}
	for _, field := range []string{"Trees", "MaxDepth", "NumLeaves", "LearningRate", "Lambda",
		"MinChildWeight", "MinSamplesLeaf", "Subsample", "MaxBins", "Alpha"} {
		if !strings.Contains(err.Error(), field+" must") {
			t.Errorf("error does not name %s:\n%v", field, err)
		}
	}
	p = DefaultParams()
	p.Loss = Loss(7)
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "Loss must") {
		t.Errorf("unknown loss: got %v", err)
	}
	p = DefaultParams()
	p.Alpha = 0 // ignored unless Loss is Quantile
	if err := p.Validate(); err != nil {
		t.Errorf("Alpha should not matter for SquaredError: %v", err)
	}
}

func TestTrainRejectsBadData(t *testing.T) {
	good := func() Dataset {
		return Dataset{Names: []string{"a", "b"}, Cols: [][]float64{{1, 2, 3}, {4, 5, 6}}, Label: []float64{1, 2, 3}}
	}
	cases := []struct {
		name string
		edit func(*Dataset)
		want string
	}{
		{"empty", func(d *Dataset) { *d = Dataset{} }, "no rows"},
		{"no features", func(d *Dataset) { d.Cols, d.Names = nil, nil }, "no features"},
		{"ragged", func(d *Dataset) { d.Cols[1] = d.Cols[1][:2] }, "column 1 has 2 rows, Label has 3"},
		{"nan label", func(d *Dataset) { d.Label[2] = math.NaN() }, "Label[2] is NaN"},
		{"inf label", func(d *Dataset) { d.Label[0] = math.Inf(-1) }, "Label[0] is -Inf"},
		{"names count", func(d *Dataset) { d.Names = d.Names[:1] }, "1 Names for 2 Cols"},
		{"name with =", func(d *Dataset) { d.Names[0] = "a=b" }, "contains whitespace or '='"},
		{"name with space", func(d *Dataset) { d.Names[1] = "b c" }, "contains whitespace or '='"},
		{"empty name", func(d *Dataset) { d.Names[1] = "" }, "Names[1] is empty"},
		{"duplicate name", func(d *Dataset) { d.Names[1] = "a" }, `both "a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := good()
			c.edit(&d)
			m, err := Train(d, DefaultParams())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Train error = %v, want one containing %q (model %v)", err, c.want, m)
			}
		})
	}
	// Bad params and bad data are reported together.
	d := good()
	d.Label[0] = math.NaN()
	p := DefaultParams()
	p.Trees = 0
	if _, err := Train(d, p); err == nil || !strings.Contains(err.Error(), "Trees must") ||
		!strings.Contains(err.Error(), "Label[0]") {
		t.Fatalf("want both problems reported, got %v", err)
	}
	// nil Names default to LightGBM's Column_i.
	d = good()
	d.Names = nil
	m, err := Train(d, DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.FeatureNames(), " "); got != "Column_0 Column_1" {
		t.Fatalf("default names %q", got)
	}
}
