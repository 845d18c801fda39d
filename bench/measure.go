package bench

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// measure runs n calls of fn over conc workers, each waiting pause before its next call, and
// returns each call's latency and the wall time.
func measure(n, conc int, pause time.Duration, fn func(i int)) ([]time.Duration, time.Duration) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				t := time.Now()
				fn(i)
				lat[i] = time.Since(t)
				if pause > 0 {
					time.Sleep(pause)
				}
			}
		}()
	}
	wg.Wait()
	return lat, time.Since(began)
}

// sortedMicros returns the latencies in microseconds, in ascending order: what
// internal/quantile's Sorted reads. lat is not modified.
func sortedMicros(lat []time.Duration) []float64 {
	us := make([]float64, len(lat))
	for i, d := range lat {
		us[i] = float64(d.Nanoseconds()) / 1000
	}
	slices.Sort(us)
	return us
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// onExit registers f with the caller's atExit hook, when there is one.
func onExit(atExit func(func()), f func()) {
	if atExit != nil {
		atExit(f)
	}
}
