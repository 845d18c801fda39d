package workload

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// AtRate keeps the requests, their order and their relative arrival pattern, and hits the
// target mean rate exactly on a bursty trace (irregular gaps, ties); on the production ladder the
// stages scale with the arrivals.
func TestAtRate(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	at := time.Date(2023, 11, 16, 18, 0, 0, 0, time.UTC)
	for i := range 200 {
		gap := time.Duration(1+(i*i)%17) * 37 * time.Millisecond
		if i%10 == 3 {
			gap = 0 // ties stay ties
		}
		at = at.Add(gap)
		fmt.Fprintf(&csv, "%s,%d,%d\n", at.Format(azureTimeLayout), 100+i, 10+i%7)
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	trace, err := Scenario("azure-conv", Params{TracePath: path, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := Scenario("production", Params{Servers: 2, Seed: 1, Requests: 300})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*Workload{trace, prod} {
		for _, rate := range []float64{0.5, 3, 40, 1000} {
			before := w.Requests[len(w.Requests)-1].Arrival
			s, err := w.AtRate(rate)
			if err != nil {
				t.Fatal(err)
			}
			if w.Requests[len(w.Requests)-1].Arrival != before {
				t.Fatalf("%s: AtRate modified its receiver", w.Name)
			}
			n := len(s.Requests)
			if n != len(w.Requests) || s.Rate != rate || s.Name != w.Name {
				t.Fatalf("%s at %v: %d requests, rate %v, name %q", w.Name, rate, n, s.Rate, s.Name)
			}
			got := float64(n-1) / (s.Requests[n-1].Arrival - s.Requests[0].Arrival).Seconds()
			if w == trace && math.Abs(got-rate)/rate > 1e-6 {
				t.Errorf("%s: mean rate %v, want %v", w.Name, got, rate)
			}
			k := float64(s.Requests[n-1].Arrival) / float64(w.Requests[n-1].Arrival)
			for i := range s.Requests {
				a, b := w.Requests[i], s.Requests[i]
				if b.ID != a.ID || b.InputTokens != a.InputTokens || b.OutputTokens != a.OutputTokens || len(b.Blocks) != len(a.Blocks) || b.SessionID != a.SessionID {
					t.Fatalf("%s: request %d changed: %+v → %+v", w.Name, i, a, b)
				}
				if i > 0 && b.Arrival < s.Requests[i-1].Arrival {
					t.Fatalf("%s: request %d arrives before %d", w.Name, i, i-1)
				}
				if want := float64(a.Arrival) * k; math.Abs(float64(b.Arrival)-want) > 1 {
					t.Fatalf("%s: request %d at %v, want %v (every time × %v)", w.Name, i, b.Arrival, time.Duration(want), k)
				}
			}
			for i, st := range s.Stages {
				o := w.Stages[i]
				if math.Abs(float64(st.Duration)-k*float64(o.Duration)) > 1 || math.Abs(st.Rate*k-o.Rate) > 1e-9*o.Rate {
					t.Errorf("%s: stage %d %+v, want %+v scaled by %v", w.Name, i, st, o, k)
				}
			}
		}
	}
	if len(prod.Stages) == 0 {
		t.Fatal("production has no stages to check")
	}
	if native := float64(len(trace.Requests)-1) / trace.Requests[len(trace.Requests)-1].Arrival.Seconds(); math.Abs(native-trace.Rate) > 1e-9*native {
		t.Fatalf("the trace's rate %v is not its mean rate %v", trace.Rate, native)
	}
	// A trace of one row, or of rows that all arrive at once, has no rate.
	one, err := Scenario("azure-conv", Params{TracePath: path, Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w    *Workload
		rate float64
		want string
	}{{trace, 0, "rate must be"}, {trace, math.Inf(1), "rate must be"}, {trace, math.NaN(), "rate must be"},
		{one, 1, "no rate to scale"}, {&Workload{Requests: []Request{{}, {}}}, 1, "no rate to scale"}} {
		if _, err := c.w.AtRate(c.rate); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AtRate(%v) on %d requests: %v, want an error with %q", c.rate, len(c.w.Requests), err, c.want)
		}
	}
}
