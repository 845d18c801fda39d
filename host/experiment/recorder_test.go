package experiment

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// armReport returns the named arm's report.
func armReport(t *testing.T, r Report, name string) ArmReport {
	t.Helper()
	for _, a := range r.Arms {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no arm %q in %+v", name, r.Arms)
	return ArmReport{}
}

func TestWindowEvictionKeepsLifetimeCounts(t *testing.T) {
	tr := NewRecorder("scorers.0", []string{"control"}, "", 5)
	for i := 1; i <= 12; i++ {
		// The three failures are among the first outcomes, evicted from the window of 5.
		tr.Record("control", Outcome{TTFTMs: float64(i), Failed: i <= 3})
	}
	a := armReport(t, tr.Report(), "control")
	if a.Requests != 12 || a.Failed != 3 || a.Window != 5 {
		t.Errorf("requests/failed/window = %d/%d/%d, want 12/3/5", a.Requests, a.Failed, a.Window)
	}
	if a.TTFTp50Ms != 10 { // window holds 8..12
		t.Errorf("TTFT p50 = %v, want 10 (the median of the last five)", a.TTFTp50Ms)
	}
}

func TestDefaultWindow(t *testing.T) {
	tr := NewRecorder("s", []string{"a"}, "", 0)
	for range DefaultWindow + 7 {
		tr.Record("a", Outcome{E2EMs: 1})
	}
	a := armReport(t, tr.Report(), "a")
	if a.Window != DefaultWindow || a.Requests != DefaultWindow+7 {
		t.Errorf("window/requests = %d/%d, want %d/%d", a.Window, a.Requests, DefaultWindow, DefaultWindow+7)
	}
}

func TestQuantilesOverObservedNonFailed(t *testing.T) {
	tr := NewRecorder("s", []string{"a"}, "", 1000)
	var outs []Outcome
	for i := 1; i <= 100; i++ {
		outs = append(outs, Outcome{TTFTMs: float64(i), TPOTMs: float64(2 * i), E2EMs: float64(1000 + i)})
	}
	outs = append(outs,
		Outcome{E2EMs: 1050.5}, // TTFT and TPOT not observed
		Outcome{TTFTMs: 9999, TPOTMs: 9999, E2EMs: 1, Failed: true}, // failed: no latency figures
	)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(outs), func(i, j int) { outs[i], outs[j] = outs[j], outs[i] })
	for _, o := range outs {
		tr.Record("a", o)
	}
	a := armReport(t, tr.Report(), "a")
	want := ArmReport{
		Name: "a", Requests: 102, Failed: 1, Window: 102,
		TTFTp50Ms: 50.5, TTFTp95Ms: 95.05, // type 7 over 1..100: 1 + p·99
		TPOTp50Ms: 101, TPOTp95Ms: 190.1,
		E2Ep50Ms: 1050.5, // 1001..1100 plus 1050.5: the 51st of 101
	}
	if !near(a.TTFTp95Ms, want.TTFTp95Ms, 1e-9) || !near(a.TPOTp95Ms, want.TPOTp95Ms, 1e-9) {
		t.Errorf("p95 TTFT/TPOT = %v/%v, want %v/%v", a.TTFTp95Ms, a.TPOTp95Ms, want.TTFTp95Ms, want.TPOTp95Ms)
	}
	a.TTFTp95Ms, a.TPOTp95Ms = want.TTFTp95Ms, want.TPOTp95Ms
	if a != want {
		t.Errorf("got %+v\nwant %+v", a, want)
	}
}

func TestNoObservationsReportZero(t *testing.T) {
	tr := NewRecorder("s", []string{"a"}, "", 0)
	tr.Record("a", Outcome{Failed: true})
	a := armReport(t, tr.Report(), "a")
	if a.TTFTp50Ms != 0 || a.TPOTp95Ms != 0 || a.E2Ep50Ms != 0 || a.SLOAttainment != 0 || a.WithSLO != 0 {
		t.Errorf("got %+v, want zero figures", a)
	}
}

func TestSLORules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       Outcome
		withSLO int
		met     bool
	}{
		{"no objective is excluded", Outcome{TTFTMs: 900}, 0, false},
		{"failed without objective is excluded", Outcome{Failed: true}, 0, false},
		{"TTFT met", Outcome{TTFTMs: 200, SLOTTFTMs: 300}, 1, true},
		{"TTFT equal to its objective is met", Outcome{TTFTMs: 300, SLOTTFTMs: 300}, 1, true},
		{"TTFT missed", Outcome{TTFTMs: 301, SLOTTFTMs: 300}, 1, false},
		{"unobserved TTFT counts as met", Outcome{E2EMs: 5000, SLOTTFTMs: 300}, 1, true},
		{"TPOT missed though TTFT met", Outcome{TTFTMs: 100, TPOTMs: 60, SLOTTFTMs: 300, SLOTPOTMs: 50}, 1, false},
		{"both met", Outcome{TTFTMs: 100, TPOTMs: 40, SLOTTFTMs: 300, SLOTPOTMs: 50}, 1, true},
		{"unobserved TPOT counts as met", Outcome{TTFTMs: 100, SLOTTFTMs: 300, SLOTPOTMs: 50}, 1, true},
		{"failed counts as not met", Outcome{TTFTMs: 100, SLOTTFTMs: 300, Failed: true}, 1, false},
	} {
		tr := NewRecorder("s", []string{"a"}, "", 0)
		tr.Record("a", tc.o)
		a := armReport(t, tr.Report(), "a")
		wantAtt := 0.0
		if tc.met {
			wantAtt = 1
		}
		if a.WithSLO != tc.withSLO || a.SLOAttainment != wantAtt {
			t.Errorf("%s: with_slo %d, attainment %v; want %d, %v", tc.name, a.WithSLO, a.SLOAttainment, tc.withSLO, wantAtt)
		}
	}
}

func TestSLOAttainmentRatio(t *testing.T) {
	tr := NewRecorder("s", []string{"a"}, "", 0)
	for i := range 8 {
		tr.Record("a", Outcome{TTFTMs: float64(100 * i), SLOTTFTMs: 450}) // 0 (unobserved)..400 met, 500..700 missed
	}
	tr.Record("a", Outcome{TTFTMs: 10}) // no objective
	a := armReport(t, tr.Report(), "a")
	if a.WithSLO != 8 || a.SLOAttainment != 5.0/8 {
		t.Errorf("with_slo %d, attainment %v; want 8, 0.625", a.WithSLO, a.SLOAttainment)
	}
}

func TestUnknownArm(t *testing.T) {
	tr := NewRecorder("s", []string{"control", "candidate"}, "", 0)
	tr.Record("other", Outcome{TTFTMs: 1})
	tr.Record("", Outcome{TTFTMs: 1})
	tr.Record("control", Outcome{TTFTMs: 1})
	r := tr.Report()
	if r.Unknown != 2 {
		t.Errorf("Unknown = %d, want 2", r.Unknown)
	}
	if c, d := armReport(t, r, "control"), armReport(t, r, "candidate"); c.Requests != 1 || d.Requests != 0 {
		t.Errorf("requests control/candidate = %d/%d, want 1/0", c.Requests, d.Requests)
	}
}

func TestDuplicateArmKeptOnce(t *testing.T) {
	r := NewRecorder("s", []string{"a", "b", "a"}, "", 0).Report()
	if len(r.Arms) != 2 || r.Arms[0].Name != "a" || r.Arms[1].Name != "b" {
		t.Errorf("arms %+v, want a, b", r.Arms)
	}
}

func TestConcurrentRecord(t *testing.T) {
	const workers, each = 8, 2000
	tr := NewRecorder("s", []string{"control", "candidate"}, "shadow", 500)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range each {
				arm := []string{"control", "candidate"}[i%2]
				tr.Record(arm, Outcome{TTFTMs: float64(i + 1), Failed: i%10 == 0, SLOTTFTMs: 1000})
				tr.RecordShadow(i%4 != 0, "ep-1", "ep-2")
				if i%100 == 0 {
					_ = tr.Report()
				}
			}
			tr.Record("nope", Outcome{})
		})
	}
	wg.Wait()
	r := tr.Report()
	for _, a := range r.Arms {
		if a.Requests != workers*each/2 || a.Window != 500 {
			t.Errorf("%s: requests %d, window %d; want %d, 500", a.Name, a.Requests, a.Window, workers*each/2)
		}
	}
	// Failures are i%10 == 0, all even i, so all on control.
	if c := armReport(t, r, "control"); c.Failed != workers*each/10 {
		t.Errorf("control failed %d, want %d", c.Failed, workers*each/10)
	}
	if r.Unknown != workers {
		t.Errorf("unknown %d, want %d", r.Unknown, workers)
	}
	if r.Shadow.Cycles != workers*each || r.Shadow.Agreed != workers*each*3/4 || len(r.Shadow.LastDisagreements) != 20 {
		t.Errorf("shadow %d cycles, %d agreed, %d kept; want %d, %d, 20",
			r.Shadow.Cycles, r.Shadow.Agreed, len(r.Shadow.LastDisagreements), workers*each, workers*each*3/4)
	}
}
