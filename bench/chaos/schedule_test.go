package chaos

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFaultScheduleCountsSpreadAndInterleaving(t *testing.T) {
	const window = 30 * time.Second
	counts := map[Kind]int{KindSwap: 20, KindKill: 5, KindBadReload: 3}
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 50; seed++ {
		s := Schedule(Counts{Swaps: counts[KindSwap], Kills: counts[KindKill], BadReloads: counts[KindBadReload]}, window, seed)
		if len(s) != 28 {
			t.Fatalf("seed %d: %d faults, want 28", seed, len(s))
		}
		if !slices.Equal(s, Schedule(Counts{Swaps: 20, Kills: 5, BadReloads: 3}, window, seed)) {
			t.Fatalf("seed %d: the schedule is not reproducible", seed)
		}
		next := map[Kind]int{}
		var order strings.Builder
		for j, f := range s {
			// Equal slots, each fault at its slot's centre.
			if want := time.Duration((float64(j) + 0.5) / 28 * float64(window)); f.At != want {
				t.Fatalf("seed %d: fault %d at %v, want %v", seed, j, f.At, want)
			}
			// Each kind in its own order, covering the window evenly.
			if f.N != next[f.Kind] {
				t.Fatalf("seed %d: fault %d is %v #%d, want #%d", seed, j, f.Kind, f.N, next[f.Kind])
			}
			next[f.Kind]++
			c := float64(counts[f.Kind])
			if off := math.Abs(f.At.Seconds()/window.Seconds() - (float64(f.N)+0.5)/c); off > 0.25/c+4.0/28 {
				t.Errorf("seed %d: %v #%d at %v is %.3f of the window off its even place", seed, f.Kind, f.N, f.At, off)
			}
			// Interleaved: no two kills or two bad reloads in a row.
			if j > 0 && f.Kind != KindSwap && s[j-1].Kind == f.Kind {
				t.Errorf("seed %d: faults %d and %d are both %v", seed, j-1, j, f.Kind)
			}
			order.WriteString(f.Kind.String()[:1])
		}
		for k, c := range counts {
			if next[k] != c {
				t.Errorf("seed %d: %d %v, want %d", seed, next[k], k, c)
			}
		}
		orders[order.String()] = true
	}
	if len(orders) < 2 {
		t.Errorf("50 seeds gave one order: the order is not seeded")
	}
	if s := Schedule(Counts{}, window, 1); len(s) != 0 {
		t.Errorf("no faults asked, got %v", s)
	}
	if s := Schedule(Counts{Kills: 2, Stops: 2}, 8*time.Second, 1); len(s) != 4 || countKind(s, KindStop) != 2 || countKind(s, KindKill) != 2 {
		t.Errorf("2 kills and 2 stops: %+v", s)
	}
	s := Schedule(Counts{Kills: 3}, 6*time.Second, 1)
	if len(s) != 3 || s[0].At != time.Second || s[1].At != 3*time.Second || s[2].At != 5*time.Second {
		t.Errorf("3 kills over 6 s: %+v", s)
	}
}

// countKind counts the faults of kind k in s.
func countKind(s []Planned, k Kind) int {
	n := 0
	for _, f := range s {
		if f.Kind == k {
			n++
		}
	}
	return n
}
