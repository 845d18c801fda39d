package report

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/stats"
)

func TestTimeBuckets(t *testing.T) {
	ms := time.Millisecond
	outs := []stats.Outcome{
		{Arrival: 0, TTFT: 10 * ms},
		{Arrival: 1 * time.Second, TTFT: 20 * ms},
		{Arrival: 1500 * ms, Shed: true},
		{Arrival: 2 * time.Second, TTFT: 30 * ms},
		{Arrival: 4 * time.Second, TTFT: 40 * ms}, // at end: last bucket
	}
	tests := []struct {
		name       string
		start, end time.Duration
		n          int
		want       []bucket
	}{
		{
			// Buckets [0,2) and [2,4]. Bucket 0: {10, 20}: p50 = 15, p95 = 10 + 10·0.95 = 19.5.
			// Bucket 1: {30, 40}: p50 = 35, p95 = 39.5. The shed request is skipped.
			name: "two buckets", start: 0, end: 4 * time.Second, n: 2,
			want: []bucket{{midS: 1, p50: 15, p95: 19.5, n: 2}, {midS: 3, p50: 35, p95: 39.5, n: 2}},
		},
		{
			// Buckets of 1 s: [0,1) {10}, [1,2) {20}, [2,3) {30}, [3,4] {40}.
			name: "four buckets", start: 0, end: 4 * time.Second, n: 4,
			want: []bucket{{0.5, 10, 10, 1}, {1.5, 20, 20, 1}, {2.5, 30, 30, 1}, {3.5, 40, 40, 1}},
		},
		{
			// Eight buckets of 0.5 s: 1.5 s holds only the shed request, 0.5, 2.5, 3.0 and 3.5 s nothing.
			name: "empty buckets", start: 0, end: 4 * time.Second, n: 8,
			want: []bucket{{0.25, 10, 10, 1}, {0.75, 0, 0, 0}, {1.25, 20, 20, 1}, {1.75, 0, 0, 0},
				{2.25, 30, 30, 1}, {2.75, 0, 0, 0}, {3.25, 0, 0, 0}, {3.75, 40, 40, 1}},
		},
		{
			// Zero span: one bucket holding everything served: {10,20,30,40}: p50 = 25,
			// p95 at rank 0.95·3 = 2.85: 30 + 0.85·10 = 38.5.
			name: "zero span", start: 0, end: 0, n: 60,
			want: []bucket{{0, 25, 38.5, 4}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := timeBuckets(outs, tt.start, tt.end, tt.n)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d buckets, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.n != w.n || !near(g.midS, w.midS) || !near(g.p50, w.p50) || !near(g.p95, w.p95) {
					t.Errorf("bucket %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestCDFPoints(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		max    int
		want   []point
	}{
		{name: "empty", values: nil, max: 10, want: nil},
		// Sorted {1, 2, 3}: each value with its rank / 3.
		{name: "all points", values: []float64{3, 1, 2}, max: 10, want: []point{{1, 1.0 / 3}, {2, 2.0 / 3}, {3, 1}}},
		// Five values, three points: ranks k·4/2 = 0, 2, 4 → (10, 1/5), (30, 3/5), (50, 1).
		{name: "thinned", values: []float64{50, 40, 30, 20, 10}, max: 3, want: []point{{10, 0.2}, {30, 0.6}, {50, 1}}},
		{name: "one point", values: []float64{5, 7}, max: 1, want: []point{{7, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.values)
			got := cdfPoints(in, tt.max)
			if !slices.Equal(in, tt.values) {
				t.Error("cdfPoints modified its input")
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if !near(got[i].x, tt.want[i].x) || !near(got[i].y, tt.want[i].y) {
					t.Errorf("point %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSubsample(t *testing.T) {
	pts := make([]point, 10)
	for i := range pts {
		pts[i] = point{float64(i), 0}
	}
	// Stride 10/4: indexes 0·10/4 = 0, 10/4 = 2, 20/4 = 5, 30/4 = 7.
	got := subsample(pts, 4)
	want := []point{{0, 0}, {2, 0}, {5, 0}, {7, 0}}
	if !slices.Equal(got, want) {
		t.Errorf("subsample = %v, want %v", got, want)
	}
	if got := subsample(pts, 20); len(got) != 10 {
		t.Errorf("subsample under the limit kept %d points, want 10", len(got))
	}
}

func TestAxis(t *testing.T) {
	tests := []struct {
		name     string
		lo, hi   float64
		allowLog bool
		wantLog  bool
		ticks    []float64
	}{
		// 5..400 ms: 400/5 = 80 < 100, two decades or less → linear from 0; step nice(400/5 = 80) = 100.
		{name: "under two decades", lo: 5, hi: 400, allowLog: true, ticks: []float64{0, 100, 200, 300, 400}},
		// 5..600: 120 > 100 → log, decades 10^0 (floor log10 5) .. 10^3 (ceil log10 600).
		{name: "over two decades", lo: 5, hi: 600, allowLog: true, wantLog: true, ticks: []float64{1, 10, 100, 1000}},
		// Exactly 100× is two decades, not more → linear; step nice(1000/5 = 200) = 200.
		{name: "exactly two decades", lo: 10, hi: 1000, allowLog: true, ticks: []float64{0, 200, 400, 600, 800, 1000}},
		// Log not allowed (time axis): linear, step nice(60/5 = 12) = 20 → 0..60.
		{name: "log not allowed", lo: 0.1, hi: 60, allowLog: false, ticks: []float64{0, 20, 40, 60}},
		// lo = 0 cannot be log; step nice(0.2) = 0.2.
		{name: "zero low end", lo: 0, hi: 1, allowLog: true, ticks: []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		// Empty range: [0, 1] with the same ticks.
		{name: "degenerate", lo: 0, hi: 0, allowLog: true, ticks: []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		// Same decade on a log-eligible range is impossible, but a range inside one decade widens:
		// 0.002..0.9: 450× → log, 10^-3 .. 10^0.
		{name: "sub-millisecond", lo: 0.002, hi: 0.9, allowLog: true, wantLog: true, ticks: []float64{0.001, 0.01, 0.1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAxis(tt.lo, tt.hi, tt.allowLog)
			if a.log != tt.wantLog {
				t.Errorf("log = %v, want %v", a.log, tt.wantLog)
			}
			if len(a.ticks) != len(tt.ticks) {
				t.Fatalf("ticks = %v, want %v", a.ticks, tt.ticks)
			}
			for i := range a.ticks {
				if !near(a.ticks[i], tt.ticks[i]) {
					t.Errorf("ticks = %v, want %v", a.ticks, tt.ticks)
					break
				}
			}
			if !near(a.pos(a.lo), 0) || !near(a.pos(a.hi), 1) {
				t.Errorf("pos(lo), pos(hi) = %v, %v, want 0, 1", a.pos(a.lo), a.pos(a.hi))
			}
		})
	}
	// On the log axis 1..1000, 10 sits a third of the way, 100 two thirds.
	a := newAxis(5, 600, true)
	// Minor grid at 2× and 5× each decade below the top one: 2, 5, 20, 50, 200, 500.
	want := []float64{2, 5, 20, 50, 200, 500}
	if len(a.minor) != len(want) {
		t.Fatalf("log minor ticks = %v, want %v", a.minor, want)
	}
	for i := range want {
		if !near(a.minor[i], want[i]) {
			t.Errorf("log minor ticks = %v, want %v", a.minor, want)
			break
		}
	}
	if !near(a.pos(10), 1.0/3) || !near(a.pos(100), 2.0/3) || a.pos(0) != 0 {
		t.Errorf("log pos(10), pos(100), pos(0) = %v, %v, %v", a.pos(10), a.pos(100), a.pos(0))
	}
}

func TestTickLabel(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.30000000000000004: "0.3", 250: "250", 20000: "20k", 0.001: "0.001"} {
		if got := tickLabel(v); got != want {
			t.Errorf("tickLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
