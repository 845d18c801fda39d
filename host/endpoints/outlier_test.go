package endpoints

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// outlierSet is a set of n endpoints e0 … e(n-1) on a clock the test moves, ejecting after 3
// failed requests for 10 s (× the streak, up to 25 s); it is not run: only reports change it.
func outlierSet(t *testing.T, n int, maxPercent int) (*Set, *time.Time, *bytes.Buffer) {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var eps []Endpoint
	for i := range n {
		eps = append(eps, Endpoint{ID: fmt.Sprintf("e%d", i), Address: fmt.Sprintf("127.0.0.1:%d", 9000+i)})
	}
	logs := &bytes.Buffer{}
	s, err := New(Config{Now: func() time.Time { return now }, Log: zerolog.New(logs),
		Outlier: Outlier{ConsecutiveFailures: 3, BaseEjectionTime: 10 * time.Second, MaxEjectionTime: 25 * time.Second, MaxEjectionPercent: maxPercent}}, eps)
	if err != nil {
		t.Fatal(err)
	}
	return s, &now, logs
}

func fail(s *Set, id string, n int) {
	for range n {
		s.ReportRequest(id, errors.New("answered 500 Internal Server Error"))
	}
}

func ejected(s *Set, id string) bool {
	st, _ := s.Get(id)
	return st.Ejected
}

func TestConsecutiveFailedRequestsEjectForAGrowingBackoff(t *testing.T) {
	s, now, logs := outlierSet(t, 3, 0)
	fail(s, "e0", 2)
	s.ReportRequest("e0", nil) // a success restarts the count
	fail(s, "e0", 2)
	if ejected(s, "e0") {
		t.Fatal("ejected after 2 failures in a row")
	}
	fail(s, "e0", 1)
	st, _ := s.Get("e0")
	if !st.Ejected || st.Routable() || !st.Healthy || st.Ejections != 1 || !st.EjectedUntil.Equal(now.Add(10*time.Second)) {
		t.Fatalf("after 3 failures in a row: %+v; want ejected for 10s, still healthy", st)
	}
	if !strings.Contains(logs.String(), `"endpoint":"e0"`) || !strings.Contains(logs.String(), "endpoint ejected") {
		t.Errorf("no ejection logged: %s", logs)
	}
	fail(s, "e0", 10) // its requests still in flight end while it is out: ignored
	*now = now.Add(10 * time.Second)
	if st, _ := s.Get("e0"); st.Ejected || st.RequestFailures != 0 {
		t.Fatalf("after its ejection: %+v; want back, with no failures counted", st)
	}
	fail(s, "e0", 3) // still broken: out again, twice as long
	if st, _ := s.Get("e0"); !st.EjectedUntil.Equal(now.Add(20*time.Second)) || st.Ejections != 2 {
		t.Errorf("second ejection until %v, want %v", st.EjectedUntil, now.Add(20*time.Second))
	}
	*now = now.Add(20 * time.Second)
	fail(s, "e0", 3) // the third is capped at MaxEjectionTime
	if st, _ := s.Get("e0"); !st.EjectedUntil.Equal(now.Add(25 * time.Second)) {
		t.Errorf("third ejection until %v, want the 25s cap", st.EjectedUntil)
	}
	// Recovered: 30 s (three base periods) in the rotation bring the multiplier from 3 to 0.
	*now = now.Add(25*time.Second + 30*time.Second)
	fail(s, "e0", 3)
	if st, _ := s.Get("e0"); !st.EjectedUntil.Equal(now.Add(10 * time.Second)) {
		t.Errorf("after 30s in the rotation, ejected until %v, want the base 10s again", st.EjectedUntil)
	}
}

func TestEjectionNeverTakesTheLastEndpointAndRespectsTheShare(t *testing.T) {
	s, _, _ := outlierSet(t, 2, 0)
	fail(s, "e0", 3)
	fail(s, "e1", 5)
	if !ejected(s, "e0") || ejected(s, "e1") {
		t.Errorf("e0 ejected %v, e1 %v; want e0 out and e1, the last in the rotation, kept", ejected(s, "e0"), ejected(s, "e1"))
	}
	one, _, _ := outlierSet(t, 1, 0)
	fail(one, "e0", 5)
	if ejected(one, "e0") {
		t.Error("the only endpoint was ejected")
	}
	// 10 endpoints at 20 %: two may be out at once.
	s, _, _ = outlierSet(t, 10, 20)
	for i := range 3 {
		fail(s, fmt.Sprintf("e%d", i), 3)
	}
	if !ejected(s, "e0") || !ejected(s, "e1") || ejected(s, "e2") {
		t.Errorf("ejected e0 %v e1 %v e2 %v; want the first two only", ejected(s, "e0"), ejected(s, "e1"), ejected(s, "e2"))
	}
}

func TestOutlierConfigIsChecked(t *testing.T) {
	for _, o := range []Outlier{{MaxEjectionPercent: 101}, {ConsecutiveFailures: -1}, {BaseEjectionTime: time.Minute, MaxEjectionTime: time.Second}} {
		if _, err := New(Config{Outlier: o}, nil); err == nil || !strings.Contains(err.Error(), "ejection") {
			t.Errorf("%+v: error %v, want one about ejection", o, err)
		}
	}
	s, _, _ := outlierSet(t, 2, 0)
	s.cfg.Outlier.Disabled = true
	fail(s, "e0", 10)
	if ejected(s, "e0") {
		t.Error("ejected with outlier detection disabled")
	}
}

// An endpoint whose requests all fail but which outlier detection may not eject is failing: in
// the rotation, not serving, until one of its requests succeeds; a full outage leaves no endpoint
// serving although all stay in the rotation.
func TestAnEndpointThatCannotBeEjectedIsFailing(t *testing.T) {
	tests := []struct {
		name     string
		n, pct   int  // endpoints, MaxEjectionPercent
		disabled bool // outlier ejection off
		fails    map[string]int
		failing  []string // failing, in the rotation
		ejected  []string
		kept     string // the log's reason for keeping the first failing one
	}{
		// e0 goes out first; e1, the last in the rotation, stays failing.
		{name: "full outage of two", n: 2, fails: map[string]int{"e0": 3, "e1": 3}, failing: []string{"e1"}, ejected: []string{"e0"},
			kept: "it is the last endpoint in the rotation"},
		{name: "the only endpoint", n: 1, fails: map[string]int{"e0": 3}, failing: []string{"e0"}, kept: "it is the last endpoint in the rotation"},
		// 10 endpoints at 10 %: one may be out; the next failing one is kept for the share.
		{name: "the share is spent", n: 10, pct: 10, fails: map[string]int{"e0": 3, "e1": 3}, failing: []string{"e1"}, ejected: []string{"e0"},
			kept: "the ejected share is at its most (10%)"},
		// Two failures of three: not yet failing.
		{name: "below the threshold", n: 1, fails: map[string]int{"e0": 2}},
		{name: "ejection disabled", n: 2, disabled: true, fails: map[string]int{"e0": 3}, failing: []string{"e0"}, kept: "outlier ejection is disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, logs := outlierSet(t, tt.n, tt.pct)
			s.cfg.Outlier.Disabled = tt.disabled
			for i := range tt.n { // in id order, so that e0 fails first
				fail(s, fmt.Sprintf("e%d", i), tt.fails[fmt.Sprintf("e%d", i)])
			}
			var failing, out []string
			for _, st := range s.Snapshot() {
				if st.Failing {
					failing = append(failing, st.ID)
					if !st.Routable() || st.Serving() {
						t.Errorf("%s %+v: want in the rotation and not serving", st.ID, st)
					}
				}
				if st.Ejected {
					out = append(out, st.ID)
				}
			}
			if fmt.Sprint(failing) != fmt.Sprint(tt.failing) || fmt.Sprint(out) != fmt.Sprint(tt.ejected) {
				t.Errorf("failing %v, ejected %v; want %v and %v", failing, out, tt.failing, tt.ejected)
			}
			if tt.kept != "" && (!strings.Contains(logs.String(), "endpoint failing every request, kept in the rotation") || !strings.Contains(logs.String(), tt.kept)) {
				t.Errorf("log %s; want the failing endpoint logged, kept because %q", logs, tt.kept)
			}
			if len(tt.failing) == 0 {
				return
			}
			id := tt.failing[0]
			fail(s, id, 5) // still failing: logged once
			if c := strings.Count(logs.String(), "kept in the rotation"); c != 1 {
				t.Errorf("logged %d times; want once", c)
			}
			s.ReportRequest(id, nil) // recovered
			if st, _ := s.Get(id); st.Failing || !st.Serving() {
				t.Errorf("after a success: %+v; want serving", st)
			}
		})
	}
}
