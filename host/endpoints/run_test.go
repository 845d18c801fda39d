package endpoints

import (
	"testing"
	"time"
)

// TestUntilTick: a loop waits for the next multiple of its period, so that every endpoint's
// scrape of a period starts at the same tick.
func TestUntilTick(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // on a 50 ms tick
	tests := []struct {
		name   string
		now    time.Time
		period time.Duration
		want   time.Duration
	}{
		{"on a tick: the next one", base, 50 * time.Millisecond, 50 * time.Millisecond},
		{"just after a tick", base.Add(time.Millisecond), 50 * time.Millisecond, 49 * time.Millisecond},
		{"just before a tick", base.Add(49 * time.Millisecond), 50 * time.Millisecond, time.Millisecond},
		{"a scrape that overran skips the tick it missed", base.Add(70 * time.Millisecond), 50 * time.Millisecond, 30 * time.Millisecond},
		{"probe period", base.Add(250 * time.Millisecond), time.Second, 750 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := untilTick(tt.now, tt.period); got != tt.want {
			t.Errorf("%s: untilTick(%v, %v) = %v, want %v", tt.name, tt.now.Format(time.StampMilli), tt.period, got, tt.want)
		}
	}
}
