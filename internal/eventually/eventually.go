// Package eventually waits in tests for a condition that other goroutines or processes make true.
package eventually

import (
	"testing"
	"time"
)

// Poll is how often Wait checks its condition.
const Poll = 5 * time.Millisecond

// Wait checks cond every Poll until it holds, and fails t naming what when it still does not
// after within.
func Wait(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(Poll)
	}
}
