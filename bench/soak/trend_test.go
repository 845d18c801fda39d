package soak

import (
	"math"
	"testing"
)

func TestSlope(t *testing.T) {
	tests := []struct {
		name string
		s    series
		want float64
	}{
		// at 0, 1, 2, 3 (mean 1.5), v 1, 3, 2, 5 (mean 2.75): Σ(at−1.5)(v−2.75) = (−1.5)(−1.75) +
		// (−0.5)(0.25) + (0.5)(−0.75) + (1.5)(2.25) = 2.625 − 0.125 − 0.375 + 3.375 = 5.5;
		// Σ(at−1.5)² = 2.25 + 0.25 + 0.25 + 2.25 = 5; slope 5.5 / 5 = 1.1 per minute.
		{name: "hand-computed", s: series{{0, 1}, {1, 3}, {2, 2}, {3, 5}}, want: 1.1},
		// A leak of 2 MB every 30 s: 4 per minute, whatever the offset.
		{name: "straight line", s: series{{0.5, 100}, {1, 102}, {1.5, 104}, {2, 106}}, want: 4},
		{name: "flat", s: series{{0, 7}, {1, 7}, {2, 7}}, want: 0},
		{name: "one sample", s: series{{1, 7}}, want: 0},
		{name: "one time", s: series{{1, 7}, {1, 9}}, want: 0},
		{name: "none", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slope(tt.s); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("slope %v, want %v", got, tt.want)
			}
		})
	}
}

// trend fits the slope over the samples from the warm-up's end only, and keeps the first, last
// and largest of all.
func TestTrend(t *testing.T) {
	// A start-up peak at 0 and a ramp of 2 per minute from 0.5 minutes on.
	s := series{{0, 100}, {0.25, 40}, {0.5, 10}, {1, 11}, {1.5, 12}}
	got := trend(s, 0.5)
	want := Trend{Start: 100, End: 12, Max: 100, SlopePerMin: 2, Fitted: 3}
	if got != want {
		t.Errorf("trend %+v, want %+v", got, want)
	}
	// A sample whose value was not read (0) is left out of its series, not taken for a 0.
	samples := []Sample{{AtMin: 0, RouterFDs: 30}, {AtMin: 0.5}, {AtMin: 1, RouterFDs: 32}}
	if got := seriesOf(samples, func(s Sample) float64 { return s.RouterFDs }); len(got) != 2 || got[1] != (point{1, 32}) {
		t.Errorf("seriesOf %v, want the samples at 0 and 1", got)
	}
	if got := trend(nil, 0.5); got != (Trend{}) {
		t.Errorf("no samples: %+v", got)
	}
	// Every sample within the warm-up: nothing to fit.
	if got := trend(s, 5); got.Fitted != 0 || got.SlopePerMin != 0 || got.End != 12 {
		t.Errorf("all in the warm-up: %+v", got)
	}
}

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name, status string
		want         float64
		wantErr      bool
	}{
		{name: "linux", status: "Name:\tforesight\nVmPeak:\t 1300000 kB\nVmRSS:\t   51200 kB\nRssAnon:\t 40000 kB\n", want: 51200 * 1024},
		{name: "no VmRSS (a kernel thread)", status: "Name:\tkthreadd\nState:\tS (sleeping)\n", wantErr: true},
		{name: "another unit", status: "VmRSS:\t 50 MB\n", wantErr: true},
		{name: "not a number", status: "VmRSS:\t many kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmRSS([]byte(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseVmRSS: %v, %v; want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
