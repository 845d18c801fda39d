package share

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/foresight-router/foresight/plugins/producer/internal/model"
)

// stump is the model package's test model over two features: 1 when a <= 0.5, else 3.
var stump = func() string {
	b, err := os.ReadFile("../model/testdata/stump.txt")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

var names = []string{"a", "b"}

func set(t testing.TB, rows uint64, holdout float64, objective string) *model.Set {
	t.Helper()
	m, err := model.Parse([]byte(stump), 2)
	if err != nil {
		t.Fatal(err)
	}
	return &model.Set{TTFT: m, TPOT: m, Meta: model.Meta{Version: rows, Source: "trained", TrainingRows: rows,
		HoldoutTTFTMAPE: holdout, Objective: objective, TTFTFeatures: names, TPOTFeatures: names}}
}

// TestBestModel: a replica that starts serves the set trained on the most rows (then the lowest
// held-out error) among those it can serve; sets that do not load, an operator's, or of another
// objective are passed over.
func TestBestModel(t *testing.T) {
	dir := t.TempDir()
	publish := func(id string, s *model.Set) {
		t.Helper()
		if rep, err := newEx(dir, id).Exchange(t0, Outgoing{Model: s}, sink{}.merge); err != nil || !rep.ModelPublished {
			t.Fatalf("publishing %s's models: %+v, %v", id, rep, err)
		}
	}
	mean := func(m *model.Meta) bool { return m.Objective == "mean" }
	newcomer := newEx(dir, "new")
	if s, _ := newcomer.BestModel(names, names, mean); s != nil {
		t.Fatal("a model in an empty share")
	}
	publish("a", set(t, 100, 0.3, "mean"))
	publish("b", set(t, 500, 0.2, "mean"))
	publish("e", set(t, 500, 0.1, "mean"))
	publish("q", set(t, 900, 0.1, "quantile"))
	publish("x", set(t, 2000, 0.1, "mean"))
	publish("x", set(t, 2001, 0.1, "mean")) // a newer version replaces x's first
	meta := filepath.Join(dir, ModelsDir, "x", "current", model.TTFTFile)
	if err := os.WriteFile(meta, []byte(stump+"\n"), 0o644); err != nil { // no longer its checksum
		t.Fatal(err)
	}
	op := filepath.Join(dir, ModelsDir, "operator")
	if err := os.MkdirAll(op, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{model.TTFTFile, model.TPOTFile} {
		if err := os.WriteFile(filepath.Join(op, f), []byte(stump), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, from := newcomer.BestModel(names, names, mean)
	if s == nil || from != "e" || s.Meta.TrainingRows != 500 {
		t.Fatalf("best: %v from %q; want e's 500 rows (x's files are corrupt, q's objective differs)", s, from)
	}
	if s, _ := newcomer.BestModel([]string{"a", "b", "c"}, names, mean); s != nil {
		t.Error("a set over other features was served")
	}
}
