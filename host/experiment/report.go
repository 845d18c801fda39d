package experiment

import (
	"slices"
	"time"

	"github.com/foresight-router/foresight/internal/quantile"
)

// Report is what GET /admin/experiments serves for one experiment.
type Report struct {
	Slot   string        `json:"slot"`
	Arms   []ArmReport   `json:"arms"`             // config order; the first is the baseline
	Shadow *ShadowReport `json:"shadow,omitempty"` // nil when the experiment has no shadow arm
	// Unknown counts outcomes recorded for an arm the Recorder does not know (dropped).
	Unknown int64 `json:"unknown_arm_outcomes,omitempty"`
}

// ArmReport is one arm's figures. Requests and Failed are lifetime counts; everything else comes
// from the arm's window of recent outcomes. Latency quantiles are over the window's non-failed
// outcomes in which that value was observed, and are 0 when there is none.
type ArmReport struct {
	Name     string `json:"name"`
	Requests int64  `json:"requests"` // lifetime
	Failed   int64  `json:"failed"`   // lifetime
	Window   int    `json:"window"`   // outcomes in the window the figures below come from

	TTFTp50Ms float64 `json:"ttft_p50_ms"`
	TTFTp95Ms float64 `json:"ttft_p95_ms"`
	TPOTp50Ms float64 `json:"tpot_p50_ms"`
	TPOTp95Ms float64 `json:"tpot_p95_ms"`
	E2Ep50Ms  float64 `json:"e2e_p50_ms"`

	WithSLO       int     `json:"with_slo"`       // window outcomes with at least one objective
	SLOAttainment float64 `json:"slo_attainment"` // met / with_slo; 0 when with_slo is 0

	// VsBaseline compares this arm with the baseline (the first arm). It is nil on the baseline
	// itself; on every other arm it is present, and an interval whose samples are too small says
	// so with Insufficient and Reason.
	VsBaseline *Comparison `json:"vs_baseline,omitempty"`
}

// Comparison holds this arm's differences from the baseline, each this arm minus baseline.
type Comparison struct {
	Baseline          string   `json:"baseline"`
	TTFTp50DiffMs     Interval `json:"ttft_p50_diff_ms"`
	TTFTp95DiffMs     Interval `json:"ttft_p95_diff_ms"`
	SLOAttainmentDiff Interval `json:"slo_attainment_diff"`
}

// Interval is an estimate with its 95% confidence interval.
type Interval struct {
	Estimate float64 `json:"estimate"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	N1       int     `json:"n_baseline"` // observations on the baseline
	N2       int     `json:"n_arm"`      // observations on this arm
	// Significant is true when 0 lies outside [Low, High].
	Significant bool `json:"significant"`
	// Insufficient is true when either side has fewer observations than the interval needs; the
	// estimate and bounds are then 0 and Reason gives the minimum.
	Insufficient bool   `json:"insufficient,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// ShadowReport is the shadow arm's agreement with the enacted decisions.
type ShadowReport struct {
	Name          string  `json:"name"`
	Cycles        int64   `json:"cycles"`         // lifetime cycles in which the shadow decided
	Agreed        int64   `json:"agreed"`         // lifetime
	AgreementRate float64 `json:"agreement_rate"` // agreed / cycles; 0 when cycles is 0
	// LastDisagreements holds the most recent disagreements (up to 20), oldest first.
	LastDisagreements []Disagreement `json:"last_disagreements"`
}

// Disagreement is one cycle in which the shadow arm decided differently.
type Disagreement struct {
	At      time.Time `json:"at"`
	Primary string    `json:"primary"` // the enacted decision
	Shadow  string    `json:"shadow"`  // the shadow arm's decision
}

// armStats is what comparisons need from an arm beyond its report.
type armStats struct {
	ttft         []float64 // sorted
	met, withSLO int
}

// Report returns the experiment's current figures. Each arm's window is copied under its own
// lock, so arms may be a few outcomes apart when requests finish during the call.
func (t *Recorder) Report() Report {
	r := Report{
		Slot:    t.slot,
		Arms:    make([]ArmReport, 0, len(t.names)),
		Shadow:  t.shadowSnapshot(),
		Unknown: t.unknown.Load(),
	}
	stats := make([]armStats, len(t.names))
	for i, name := range t.names {
		window, requests, failed := t.arms[name].snapshot()
		ar, st := summarize(name, window)
		ar.Requests, ar.Failed = requests, failed
		if i > 0 {
			base := stats[0]
			ar.VsBaseline = &Comparison{
				Baseline:          t.names[0],
				TTFTp50DiffMs:     medianDiff(base.ttft, st.ttft),
				TTFTp95DiffMs:     p95Diff(base.ttft, st.ttft),
				SLOAttainmentDiff: attainmentDiff(base.met, base.withSLO, st.met, st.withSLO),
			}
		}
		stats[i] = st
		r.Arms = append(r.Arms, ar)
	}
	return r
}

// summarize computes an arm's window figures.
func summarize(name string, window []Outcome) (ArmReport, armStats) {
	var ttft, tpot, e2e []float64
	var st armStats
	for _, o := range window {
		if o.hasSLO() {
			st.withSLO++
			if o.metSLO() {
				st.met++
			}
		}
		if o.Failed {
			continue
		}
		ttft = appendObserved(ttft, o.TTFTMs)
		tpot = appendObserved(tpot, o.TPOTMs)
		e2e = appendObserved(e2e, o.E2EMs)
	}
	slices.Sort(ttft)
	slices.Sort(tpot)
	slices.Sort(e2e)
	st.ttft = ttft
	ar := ArmReport{
		Name:      name,
		Window:    len(window),
		TTFTp50Ms: quantile.Sorted(ttft, 0.5),
		TTFTp95Ms: quantile.Sorted(ttft, 0.95),
		TPOTp50Ms: quantile.Sorted(tpot, 0.5),
		TPOTp95Ms: quantile.Sorted(tpot, 0.95),
		E2Ep50Ms:  quantile.Sorted(e2e, 0.5),
		WithSLO:   st.withSLO,
	}
	if st.withSLO > 0 {
		ar.SLOAttainment = float64(st.met) / float64(st.withSLO)
	}
	return ar, st
}

// appendObserved appends v when it was observed (positive).
func appendObserved(s []float64, v float64) []float64 {
	if v > 0 {
		return append(s, v)
	}
	return s
}
