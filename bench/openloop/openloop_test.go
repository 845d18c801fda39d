package openloop

import (
	"context"
	"errors"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestArrivals(t *testing.T) {
	const rate, d = 200.0, 40 * time.Second
	a := Arrivals(rate, d, 1)
	// Poisson: 8000 expected, standard deviation ≈ 89.
	if n := len(a); math.Abs(float64(n)-rate*d.Seconds()) > 5*math.Sqrt(rate*d.Seconds()) {
		t.Errorf("%d arrivals in %v at %v/s", n, d, rate)
	}
	if !slices.IsSorted(a) || a[0] < 0 || a[len(a)-1] >= d {
		t.Errorf("arrivals not sorted within [0, %v): first %v, last %v", d, a[0], a[len(a)-1])
	}
	// Spread over the whole window: each quarter holds about a quarter.
	for q := range 4 {
		lo, hi := time.Duration(q)*d/4, time.Duration(q+1)*d/4
		n := 0
		for _, at := range a {
			if at >= lo && at < hi {
				n++
			}
		}
		if math.Abs(float64(n)-2000) > 5*math.Sqrt(2000) {
			t.Errorf("%d arrivals in [%v, %v), want about 2000", n, lo, hi)
		}
	}
	if !slices.Equal(a, Arrivals(rate, d, 1)) {
		t.Error("the same seed gave other arrivals")
	}
	if slices.Equal(a, Arrivals(rate, d, 2)) {
		t.Error("another seed gave the same arrivals")
	}
	if n := len(Arrivals(10, time.Second/100, 1)); n > 3 {
		t.Errorf("%d arrivals in 10 ms at 10/s", n)
	}
}

// Run sends what the in-flight bound allows, skips the rest with the reason, and returns once
// every request sent has returned.
func TestRun(t *testing.T) {
	tests := []struct {
		name                    string
		stopped                 bool
		arrivals, sent, skipped int
		reason                  string
	}{
		// Ten arrivals due at once, three slots held until the loop is over: 3 sent, 7 skipped.
		{name: "in-flight bound", arrivals: 10, sent: 3, skipped: 7, reason: "not sent: 3 requests in flight"},
		{name: "stopped", stopped: true, arrivals: 4, sent: 0, skipped: 4, reason: "not sent: the bench was stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.stopped {
				cancel()
			}
			release := make(chan struct{})
			var mu sync.Mutex
			var sentNs, skippedNs []int
			var reasons []string
			done := make(chan int)
			go func() {
				done <- Run(ctx, time.Now(), make([]time.Duration, tt.arrivals), 3, func(_ context.Context, n int) {
					mu.Lock()
					sentNs = append(sentNs, n)
					mu.Unlock()
					<-release
				}, func(n int, reason string) {
					mu.Lock()
					skippedNs = append(skippedNs, n)
					reasons = append(reasons, reason)
					last := len(skippedNs) == tt.skipped
					mu.Unlock()
					if last {
						close(release) // every arrival was seen: let the sent ones return
					}
				})
			}()
			sent := <-done
			if sent != tt.sent || len(sentNs) != tt.sent || len(skippedNs) != tt.skipped {
				t.Fatalf("Run returned %d, sent %v, skipped %v; want %d sent and %d skipped", sent, sentNs, skippedNs, tt.sent, tt.skipped)
			}
			for _, r := range reasons {
				if r != tt.reason {
					t.Errorf("reason %q, want %q", r, tt.reason)
				}
			}
		})
	}
}

func TestErrorWords(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/completions", Err: errors.New("connection  refused\n")}
	if got := TransportError(err); got != "connection refused" {
		t.Errorf("TransportError: %q", got)
	}
	if got := ErrorMessage([]byte(`{"error":{"message":"no endpoint"}}`)); got != "no endpoint" {
		t.Errorf("ErrorMessage: %q", got)
	}
	if got := Clip(strings.Repeat("a", 10), 4); got != "aaaa…" {
		t.Errorf("Clip: %q", got)
	}
}
