package stats

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// AccuracyWindows are the spans of request ordinals (in arrival order, from 0) that Online
// scores separately: a learned predictor's first requests, its young model, and the settled one.
var AccuracyWindows = [][2]int{{0, 100}, {100, 300}, {300, 1000}, {1000, 0}}

// Accuracy is how the dispatch-time predictions for the chosen endpoints held as a run went on.
type Accuracy struct {
	Windows []AccuracyWindow `json:"windows"`
	// TopDecileRatio is the mean of predicted / actual TTFT over the tenth of predicted requests
	// with the longest actual TTFT: below 1, the predictor under-predicts the long waits.
	TopDecileRatio *float64 `json:"top_decile_ttft_ratio"`
	// TPOTMAPE is the TPOT error over every request with two tokens or more whose TPOT was
	// predicted (errSum leaves out a TPOT of 0, the producer's "unknown", as the producer's own
	// foresight_predictor_mape does). TPOTPredicted is how many those were of TPOTEligible, the
	// predicted requests with two tokens or more.
	TPOTMAPE      *float64 `json:"tpot_mape"`
	TPOTPredicted int      `json:"tpot_predicted"`
	TPOTEligible  int      `json:"tpot_eligible"`
}

// AccuracyWindow is one span of Accuracy: requests From to To (exclusive; 0 for the run's end).
type AccuracyWindow struct {
	From int `json:"from"`
	To   int `json:"to"`
	// Served is the requests of the window that were served, Predicted those of them that had a
	// valid prediction: the ones TTFTMAPE and TPOTMAPE average over (nil when there are none).
	Served    int      `json:"served"`
	Predicted int      `json:"predicted"`
	TTFTMAPE  *float64 `json:"ttft_mape"`
	TPOTMAPE  *float64 `json:"tpot_mape"`
}

// Online scores the predictions of outcomes by AccuracyWindows; nil when no served request had a
// valid prediction (a strategy without a producer).
func Online(outcomes []Outcome) *Accuracy {
	order := make([]int, len(outcomes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(outcomes[a].Arrival, outcomes[b].Arrival) })

	acc := &Accuracy{}
	var ratios []ratio
	var tpotAll errSum
	for _, span := range AccuracyWindows {
		to := span[1]
		if to == 0 || to > len(order) {
			to = len(order)
		}
		if span[0] >= to {
			break
		}
		w := AccuracyWindow{From: span[0], To: span[1]}
		var ttftErr, tpotErr errSum
		for _, i := range order[span[0]:to] {
			o := &outcomes[i]
			if o.Shed {
				continue
			}
			w.Served++
			if !o.Predicted.Valid || o.TTFT <= 0 {
				continue
			}
			w.Predicted++
			actual := ms(o.TTFT)
			ttftErr.add(o.Predicted.TTFTMs, actual)
			ratios = append(ratios, ratio{actual, o.Predicted.TTFTMs / actual})
			if o.OutputTokens >= 2 {
				acc.TPOTEligible++
				tpotErr.add(o.Predicted.TPOTMs, o.TPOTMs)
				tpotAll.add(o.Predicted.TPOTMs, o.TPOTMs)
			}
		}
		w.TTFTMAPE, w.TPOTMAPE = ttftErr.mean(), tpotErr.mean()
		acc.Windows = append(acc.Windows, w)
	}
	if len(ratios) == 0 {
		return nil
	}
	slices.SortFunc(ratios, func(a, b ratio) int { return cmp.Compare(b.actual, a.actual) })
	top := ratios[:max(1, len(ratios)/10)]
	var sum float64
	for _, r := range top {
		sum += r.ratio
	}
	m := sum / float64(len(top))
	acc.TopDecileRatio, acc.TPOTMAPE, acc.TPOTPredicted = &m, tpotAll.mean(), tpotAll.n
	return acc
}

// ratio is one predicted request's actual TTFT and predicted / actual.
type ratio struct{ actual, ratio float64 }

// String is the accuracy on one line: TTFT MAPE per window (with how many requests of it were
// predicted), the top decile's ratio and the TPOT MAPE.
func (a *Accuracy) String() string {
	var b strings.Builder
	b.WriteString("TTFT MAPE")
	for _, w := range a.Windows {
		to := "end"
		if w.To > 0 {
			to = fmt.Sprint(w.To)
		}
		fmt.Fprintf(&b, " [%d,%s) %s (%d/%d predicted);", w.From, to, Percent(w.TTFTMAPE), w.Predicted, w.Served)
	}
	fmt.Fprintf(&b, " top-decile predicted/actual %.2f; TPOT MAPE %s (%d/%d predicted)", *a.TopDecileRatio,
		Percent(a.TPOTMAPE), a.TPOTPredicted, a.TPOTEligible)
	return b.String()
}

// Percent prints a fraction as a percentage, "–" when absent (nil).
func Percent(f *float64) string {
	if f == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100**f)
}
