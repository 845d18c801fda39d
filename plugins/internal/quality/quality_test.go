package quality

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestWindowRollsOver(t *testing.T) {
	w := NewWindow(3)
	w.Add(110, 100) // 10 %, 10 ms, actual under
	w.Add(90, 100)  // 10 %, 10 ms, over
	w.Add(100, 50)  // 100 %, 50 ms, under
	if w.Len() != 3 || !near(w.MAPE(), 0.4) || !near(w.MAE(), 70.0/3) || !near(w.Coverage(), 2.0/3) {
		t.Fatalf("full: len %d MAPE %v MAE %v coverage %v", w.Len(), w.MAPE(), w.MAE(), w.Coverage())
	}
	w.Add(100, 100) // pushes out the first: 10 %, 100 %, 0 %
	if w.Len() != 3 || !near(w.MAPE(), 1.1/3) || !near(w.MAE(), 60.0/3) || !near(w.Coverage(), 2.0/3) {
		t.Fatalf("rolled: len %d MAPE %v MAE %v coverage %v", w.Len(), w.MAPE(), w.MAE(), w.Coverage())
	}
	w.Add(5, 0)            // no percentage error without a positive actual: ignored
	w.Add(math.NaN(), 100) // ignored
	if w.Len() != 3 {
		t.Errorf("ignored samples were counted: len %d", w.Len())
	}
	s := w.Stats(true)
	if s.Samples != 3 || s.QuantileCoverage == nil || !near(*s.QuantileCoverage, 2.0/3) {
		t.Errorf("stats %+v", s)
	}
	if w.Stats(false).QuantileCoverage != nil {
		t.Error("a mean model reported coverage")
	}
	w.Reset()
	if w.Len() != 0 || w.MAPE() != 0 || w.MAE() != 0 || w.Coverage() != 0 {
		t.Errorf("after Reset: %d %v %v %v", w.Len(), w.MAPE(), w.MAE(), w.Coverage())
	}
}

func TestWindowSumsStayExact(t *testing.T) {
	w := NewWindow(7)
	for i := range 10000 {
		w.Add(float64(i%13)+1, float64(i%11)+1)
	}
	got := w.MAPE()
	w.resum()
	if !near(got, w.MAPE()) {
		t.Errorf("running MAPE %v, recomputed %v", got, w.MAPE())
	}
}
