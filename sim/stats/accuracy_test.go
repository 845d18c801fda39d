package stats

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestOnlineScoresEachWindowInArrivalOrder(t *testing.T) {
	// 1,200 requests given in reverse arrival order: the first 100 to arrive have no prediction
	// but every tenth, predicted 50% high; 100–299 are predicted 20% high; from 300 on 10% low.
	// Every request's TTFT is 100 ms but for the 120 longest (1,080 on), at 1,000 ms, which are
	// predicted at half: the top decile's ratio is 0.5. TPOT is predicted exactly but for 5% off
	// from 1,000 on, and unknown (0: not a prediction) for 300–399. Request 500 is shed.
	const n = 1200
	out := make([]Outcome, n)
	for k := range n {
		o := Outcome{Arrival: time.Duration(k) * time.Millisecond, TTFT: 100 * time.Millisecond, TPOTMs: 20, OutputTokens: 10}
		p := sdk.Prediction{Valid: true, TPOTMs: 20}
		switch {
		case k < 100:
			p.Valid, p.TTFTMs = k%10 == 0, 150
		case k < 300:
			p.TTFTMs = 120
		default:
			p.TTFTMs = 90
		}
		switch {
		case k >= 1000:
			p.TPOTMs = 21
		case k >= 300 && k < 400:
			p.TPOTMs = 0
		}
		if k >= 1080 {
			o.TTFT, p.TTFTMs = time.Second, 500
		}
		o.Predicted = p
		if k == 500 {
			o = Outcome{Arrival: o.Arrival, Shed: true}
		}
		out[n-1-k] = o
	}
	a := Online(out)
	if a == nil || len(a.Windows) != 4 {
		t.Fatalf("Online = %+v, want 4 windows", a)
	}
	want := []struct {
		served, predicted int
		ttft, tpot        float64
	}{
		{100, 10, 0.5, 0},
		{200, 200, 0.2, 0},
		{699, 699, 0.1, 0},
		{200, 200, (80*0.1 + 120*0.5) / 200, 0.05},
	}
	for i, w := range a.Windows {
		if w.Served != want[i].served || w.Predicted != want[i].predicted ||
			math.Abs(*w.TTFTMAPE-want[i].ttft) > 1e-9 || math.Abs(*w.TPOTMAPE-want[i].tpot) > 1e-9 {
			t.Errorf("window %d [%d,%d): served %d predicted %d TTFT %.4f TPOT %.4f, want %+v",
				i, w.From, w.To, w.Served, w.Predicted, *w.TTFTMAPE, *w.TPOTMAPE, want[i])
		}
	}
	// 1,109 predicted; the top decile is the 110 longest, all at ratio 0.5.
	if math.Abs(*a.TopDecileRatio-0.5) > 1e-9 {
		t.Errorf("top decile ratio %.4f, want 0.5", *a.TopDecileRatio)
	}
	if wantTPOT := 200 * 0.05 / 1009; math.Abs(*a.TPOTMAPE-wantTPOT) > 1e-9 || a.TPOTPredicted != 1009 || a.TPOTEligible != 1109 {
		t.Errorf("TPOT MAPE %.5f over %d of %d, want %.5f over 1009 of 1109", *a.TPOTMAPE, a.TPOTPredicted, a.TPOTEligible, wantTPOT)
	}
	line := a.String()
	for _, s := range []string{"[0,100) 50.0% (10/100 predicted)", "[1000,end)", "top-decile predicted/actual 0.50", "(1009/1109 predicted)"} {
		if !strings.Contains(line, s) {
			t.Errorf("String() = %q, want it to hold %q", line, s)
		}
	}
}

func TestOnlineWithoutPredictionsIsNil(t *testing.T) {
	out := []Outcome{{TTFT: time.Second, OutputTokens: 3, TPOTMs: 10}}
	if a := Online(out); a != nil {
		t.Errorf("Online without predictions = %+v, want nil", a)
	}
	if a := Online(nil); a != nil {
		t.Errorf("Online(nil) = %+v, want nil", a)
	}
}
