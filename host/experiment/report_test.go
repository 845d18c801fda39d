package experiment

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fill records n outcomes on arm with TTFT from, from+1, ..., of which the first met carry a met
// TTFT objective and the rest of the first withSLO a missed one.
func fill(tr *Recorder, arm string, n int, from float64, withSLO, met int) {
	for i := range n {
		o := Outcome{TTFTMs: from + float64(i)}
		switch {
		case i < met:
			o.SLOTTFTMs = o.TTFTMs
		case i < withSLO:
			o.SLOTTFTMs = o.TTFTMs / 2
		}
		tr.Record(arm, o)
	}
}

func TestComparisonMinimumSizes(t *testing.T) {
	tr := NewRecorder("scorers.0", []string{"control", "candidate"}, "", 0)
	fill(tr, "control", 20, 100, 10, 5)
	fill(tr, "candidate", 19, 100, 9, 5)

	r := tr.Report()
	if r.Arms[0].VsBaseline != nil {
		t.Errorf("baseline has a comparison: %+v", r.Arms[0].VsBaseline)
	}
	c := r.Arms[1].VsBaseline
	if c == nil || c.Baseline != "control" {
		t.Fatalf("candidate comparison %+v, want one against control", c)
	}
	if !c.TTFTp50DiffMs.Insufficient || c.TTFTp50DiffMs.N1 != 20 || c.TTFTp50DiffMs.N2 != 19 {
		t.Errorf("TTFT with 20/19 observations: %+v, want insufficient", c.TTFTp50DiffMs)
	}
	if !c.SLOAttainmentDiff.Insufficient || c.SLOAttainmentDiff.N1 != 10 || c.SLOAttainmentDiff.N2 != 9 {
		t.Errorf("attainment with 10/9 outcomes: %+v, want insufficient", c.SLOAttainmentDiff)
	}

	tr.Record("candidate", Outcome{TTFTMs: 119, SLOTTFTMs: 50}) // 20th observation, 10th with an SLO
	c = tr.Report().Arms[1].VsBaseline
	if c.TTFTp50DiffMs.Insufficient || c.TTFTp50DiffMs.N2 != 20 || c.TTFTp50DiffMs.High <= c.TTFTp50DiffMs.Low {
		t.Errorf("TTFT with 20/20 observations: %+v, want an interval", c.TTFTp50DiffMs)
	}
	if c.SLOAttainmentDiff.Insufficient || c.SLOAttainmentDiff.N2 != 10 || c.SLOAttainmentDiff.High <= c.SLOAttainmentDiff.Low {
		t.Errorf("attainment with 10/10 outcomes: %+v, want an interval", c.SLOAttainmentDiff)
	}
}

func TestComparisonSignificance(t *testing.T) {
	tr := NewRecorder("scorers.0", []string{"control", "fast", "same"}, "", 80)
	fill(tr, "control", 70, 1, 70, 56) // TTFT 1..70, attainment 56/70
	fill(tr, "fast", 80, 1, 80, 48)    // TTFT 1..80, attainment 48/80
	fill(tr, "same", 70, 1, 70, 56)

	r := tr.Report()
	fast, same := r.Arms[1].VsBaseline, r.Arms[2].VsBaseline
	// Attainment 0.6 − 0.8: Newcombe's example with the sides swapped, −0.2 in [−0.3339, −0.0524].
	a := fast.SLOAttainmentDiff
	if !near(a.Estimate, -0.2, 1e-12) || !near(a.Low, -0.3339, 5e-5) || !near(a.High, -0.0524, 5e-5) || !a.Significant {
		t.Errorf("fast attainment diff %+v, want significant −0.2 in [−0.3339, −0.0524]", a)
	}
	// Medians 35.5 and 40.5: a difference of 5 ms against intervals some 15 ranks wide.
	if d := fast.TTFTp50DiffMs; !near(d.Estimate, 5, 1e-12) || d.Significant || d.Low >= 0 || d.High <= 0 {
		t.Errorf("fast TTFT diff %+v, want 5 ms, not significant", d)
	}
	if same.SLOAttainmentDiff.Significant || same.SLOAttainmentDiff.Estimate != 0 ||
		same.TTFTp50DiffMs.Significant || same.TTFTp50DiffMs.Estimate != 0 {
		t.Errorf("identical arm compared as %+v, want zero and not significant", same)
	}

	fill(tr, "fast", 80, 1000, 0, 0) // evicts the whole window: 80 TTFTs far above the baseline's
	if d := tr.Report().Arms[1].VsBaseline.TTFTp50DiffMs; !d.Significant || d.Low <= 0 {
		t.Errorf("slow TTFT diff %+v, want significantly positive", d)
	}
}

func TestShadow(t *testing.T) {
	if r := NewRecorder("s", []string{"a"}, "", 0).Report(); r.Shadow != nil {
		t.Errorf("no shadow arm, but Shadow = %+v", r.Shadow)
	}
	noShadow := NewRecorder("s", []string{"a"}, "", 0)
	noShadow.RecordShadow(false, "x", "y")
	if r := noShadow.Report(); r.Shadow != nil {
		t.Errorf("RecordShadow without a shadow arm produced %+v", r.Shadow)
	}

	tr := NewRecorder("filters.1", []string{"a"}, "strict", 0)
	if s := tr.Report().Shadow; s == nil || s.Name != "strict" || s.Cycles != 0 || s.AgreementRate != 0 || len(s.LastDisagreements) != 0 {
		t.Errorf("fresh shadow report %+v, want named, empty", s)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := 0
	tr.now = func() time.Time { tick++; return t0.Add(time.Duration(tick) * time.Second) }
	for i := range 5 {
		tr.RecordShadow(true, fmt.Sprintf("ep-%d", i), fmt.Sprintf("ep-%d", i))
	}
	for i := range 25 {
		tr.RecordShadow(false, fmt.Sprintf("p%d", i), fmt.Sprintf("s%d", i))
	}
	s := tr.Report().Shadow
	if s.Cycles != 30 || s.Agreed != 5 || s.AgreementRate != 5.0/30 {
		t.Errorf("cycles/agreed/rate = %d/%d/%v, want 30/5/%v", s.Cycles, s.Agreed, s.AgreementRate, 5.0/30)
	}
	var want []Disagreement // the last 20 of 25, oldest first; the i-th disagreement is at tick i+1
	for i := 5; i < 25; i++ {
		want = append(want, Disagreement{At: t0.Add(time.Duration(i+1) * time.Second), Primary: fmt.Sprintf("p%d", i), Shadow: fmt.Sprintf("s%d", i)})
	}
	if diff := cmp.Diff(want, s.LastDisagreements); diff != "" {
		t.Errorf("last disagreements (-want +got):\n%s", diff)
	}
}

func TestReportJSON(t *testing.T) {
	tr := NewRecorder("scorers.0", []string{"control", "candidate"}, "shadow", 0)
	tr.now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	tr.Record("control", Outcome{TTFTMs: 100, TPOTMs: 20, E2EMs: 900, SLOTTFTMs: 200})
	tr.Record("candidate", Outcome{Failed: true})
	tr.RecordShadow(false, "ep-1", "shed: queue")
	tr.Record("gone", Outcome{})

	got, err := json.Marshal(tr.Report())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"slot":"scorers.0","arms":[` +
		`{"name":"control","requests":1,"failed":0,"window":1,"ttft_p50_ms":100,"ttft_p95_ms":100,` +
		`"tpot_p50_ms":20,"tpot_p95_ms":20,"e2e_p50_ms":900,"with_slo":1,"slo_attainment":1},` +
		`{"name":"candidate","requests":1,"failed":1,"window":1,"ttft_p50_ms":0,"ttft_p95_ms":0,` +
		`"tpot_p50_ms":0,"tpot_p95_ms":0,"e2e_p50_ms":0,"with_slo":0,"slo_attainment":0,` +
		`"vs_baseline":{"baseline":"control",` +
		`"ttft_p50_diff_ms":{"estimate":0,"low":0,"high":0,"n_baseline":1,"n_arm":0,"significant":false,` +
		`"insufficient":true,"reason":"need at least 20 TTFT observations per arm"},` +
		`"ttft_p95_diff_ms":{"estimate":0,"low":0,"high":0,"n_baseline":1,"n_arm":0,"significant":false,` +
		`"insufficient":true,"reason":"need at least 100 TTFT observations per arm"},` +
		`"slo_attainment_diff":{"estimate":0,"low":0,"high":0,"n_baseline":1,"n_arm":0,"significant":false,` +
		`"insufficient":true,"reason":"need at least 10 outcomes with an SLO per arm"}}}],` +
		`"shadow":{"name":"shadow","cycles":1,"agreed":0,"agreement_rate":0,"last_disagreements":` +
		`[{"at":"2026-01-01T00:00:00Z","primary":"ep-1","shadow":"shed: queue"}]},` +
		`"unknown_arm_outcomes":1}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestEmptyReportJSON(t *testing.T) {
	got, err := json.Marshal(NewRecorder("scorers.0", nil, "", 0).Report())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"slot":"scorers.0","arms":[]}`; string(got) != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
}
