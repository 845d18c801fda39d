package model

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stump is a hand-written LightGBM v3 model over two features: 1 when a <= 0.5, else 3 (the
// share package's tests read the same file).
var stump = func() string {
	b, err := os.ReadFile("testdata/stump.txt")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// cyclic is a three-leaf tree whose second node points back to the root: leaves would loop.
var cyclic = strings.NewReplacer("num_leaves=2", "num_leaves=3", "split_feature=0", "split_feature=0 1",
	"split_gain=1", "split_gain=1 1", "threshold=0.5", "threshold=0.5 0.5", "decision_type=2", "decision_type=2 2",
	"left_child=-1", "left_child=-1 0", "right_child=-2", "right_child=1 -2", "leaf_value=1 3", "leaf_value=1 3 5",
	"leaf_weight=1 1", "leaf_weight=1 1 1", "leaf_count=1 1", "leaf_count=1 1 1", "internal_value=2", "internal_value=2 2",
	"internal_weight=2", "internal_weight=2 2", "internal_count=2", "internal_count=2 2").Replace(stump)

func TestParse(t *testing.T) {
	m, err := Parse([]byte(stump), 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Predict([]float64{0.2, 9}); got != 1 {
		t.Errorf("Predict(a=0.2) = %v, want 1", got)
	}
	if got := m.Predict([]float64{0.7, 9}); got != 3 {
		t.Errorf("Predict(a=0.7) = %v, want 3", got)
	}
	if m.Trees() != 1 || string(m.Text()) != stump {
		t.Errorf("Trees %d, text kept: %v", m.Trees(), string(m.Text()) == stump)
	}
}

// A log-link objective's trees sum to the log of the prediction, with or without parameters on
// the objective line.
func TestParseLogLinkObjectives(t *testing.T) {
	for _, objective := range []string{"gamma", "poisson", "tweedie tweedie_variance_power:1.5"} {
		m, err := Parse([]byte(strings.Replace(stump, "objective=regression", "objective="+objective, 1)), 2)
		if err != nil {
			t.Fatalf("%s: %v", objective, err)
		}
		rows := []float64{0.2, 9, 0.7, 9}
		out := make([]float64, 2)
		if err := m.PredictRows(rows, 2, out); err != nil {
			t.Fatal(err)
		}
		if got := m.Predict(rows[:2]); got != math.Exp(1) || out[0] != math.Exp(1) || out[1] != math.Exp(3) {
			t.Errorf("%s: Predict %v, PredictRows %v; want e¹ and e³", objective, got, out)
		}
	}
}

func TestParseRejectsWhatItCannotServe(t *testing.T) {
	xgboostBinary := append([]byte{0, 0, 0, 0x3f, 1, 0, 0, 0}, []byte("binf\x00gbtree")...)
	tests := []struct {
		name, text string
		features   int
		says       string
	}{
		{"empty", "", 2, "empty model"},
		{"garbage", "hello world\nthis is not a model\n", 2, `first line is not "tree"`},
		{"an XGBoost binary", string(xgboostBinary), 2, "XGBoost binary"},
		{"LightGBM 4", strings.Replace(stump, "version=v3", "version=v4", 1), 2, `version "v4"`},
		{"no version", strings.Replace(stump, "version=v3\n", "", 1), 2, "no version line"},
		{"wrong feature count", stump, 10, "reads 2 features; this producer gives 10"},
		{"truncated", stump[:len(stump)/2], 2, "malformed LightGBM model"},
		{"corrupt numbers", strings.Replace(stump, "leaf_value=1 3", "leaf_value=1 x", 1), 2, "malformed LightGBM model"},
		{"bad child index", strings.Replace(stump, "right_child=-2", "right_child=7", 1), 2, "malformed LightGBM model"},
		{"a leaf twice", strings.Replace(stump, "right_child=-2", "right_child=-1", 1), 2, "child of two nodes"},
		{"a cycle back to the root", cyclic, 2, "node 0 is the root"},
		{"a classifier", strings.Replace(stump, "objective=regression", "objective=binary sigmoid:1", 1), 2, `objective "binary" is a classification`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.text), tt.features)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Parse: %v, %v; want an error saying %q", m, err, tt.says)
			}
		})
	}
}

func testSet(t *testing.T, version uint64) *Set {
	t.Helper()
	m, err := Parse([]byte(stump), 2)
	if err != nil {
		t.Fatal(err)
	}
	return &Set{TTFT: m, TPOT: m, Meta: Meta{Version: version, Source: "trained", TrainingRows: 42,
		TTFTFeatures: []string{"a", "b"}, TPOTFeatures: []string{"a", "b"}}}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	feats := []string{"a", "b"}
	if s, err := Load(dir, feats, feats); s != nil || err != nil {
		t.Fatalf("empty dir: %v, %v", s, err)
	}
	for v := uint64(1); v <= 4; v++ {
		if err := Save(dir, testSet(t, v)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Load(dir, feats, feats)
	if err != nil || s == nil {
		t.Fatalf("Load: %v, %v", s, err)
	}
	if s.Meta.Version != 4 || s.Meta.TrainingRows != 42 || s.Meta.Source != "trained" || s.TTFT.Predict([]float64{1, 0}) != 3 {
		t.Errorf("loaded %+v", s.Meta)
	}
	entries, _ := os.ReadDir(dir)
	versions := 0
	for _, e := range entries {
		if e.IsDir() {
			versions++
		}
	}
	if versions != 2 {
		t.Errorf("%d version directories kept, want the current and the previous", versions)
	}
	if _, err := Load(dir, []string{"a", "c"}, feats); !errors.Is(err, ErrOutdated) || !strings.Contains(err.Error(), "trained on features [a b]") {
		t.Errorf("own models over other features: %v, want ErrOutdated", err)
	}
}

func TestLoadOperatorModels(t *testing.T) {
	feats := []string{"a", "b"}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(TTFTFile, stump)
	if _, err := Load(dir, feats, feats); err == nil || !strings.Contains(err.Error(), "needs both") {
		t.Errorf("one file: %v", err)
	}
	write(TPOTFile, stump)
	s, err := Load(dir, feats, feats)
	if err != nil || s == nil || s.Meta.Source != "operator" {
		t.Fatalf("operator set: %+v, %v", s, err)
	}
	write(TPOTFile, strings.Replace(stump, "version=v3", "version=v4", 1))
	if _, err := Load(dir, feats, feats); err == nil || !strings.Contains(err.Error(), "tpot.txt") || !strings.Contains(err.Error(), "v4") {
		t.Errorf("a v4 TPOT model: %v", err)
	}
}

func TestLoadDetectsMismatchedFiles(t *testing.T) {
	feats := []string{"a", "b"}
	dir := t.TempDir()
	if err := Save(dir, testSet(t, 1)); err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(stump, "leaf_value=1 3", "leaf_value=2 3", 1)
	if err := os.WriteFile(filepath.Join(dir, current, TPOTFile), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, feats, feats); err == nil || !strings.Contains(err.Error(), "checksums") {
		t.Errorf("edited file: %v", err)
	}
}
