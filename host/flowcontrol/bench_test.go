package flowcontrol

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkPushPop keeps about 1000 items queued over 3 bands and 64 flows, and per op pushes one
// and pops one: the steady state of a saturated pool.
func BenchmarkPushPop(b *testing.B) {
	for _, policy := range policies {
		b.Run(policy, func(b *testing.B) {
			q, err := New(Config{
				Default:  Limits{MaxRequests: 1 << 20, MaxBytes: 1 << 40, TTL: time.Hour},
				Estimate: func(time.Time) time.Duration { return 50 * time.Millisecond },
			})
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]string, 1<<14)
			for i := range ids {
				ids[i] = "r" + strconv.Itoa(i)
			}
			flows := make([]string, 64)
			for i := range flows {
				flows[i] = "f" + strconv.Itoa(i)
			}
			item := func(i int) Item {
				now := t0.Add(time.Duration(i) * time.Millisecond)
				return keyed(b, policy, Item{ID: ids[i%len(ids)], Band: i % 3, Flow: flows[(i*7)%len(flows)], Arrival: now, Bytes: 1000},
					float64(i%200))
			}
			for i := range 1000 {
				if err := q.Push(item(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := q.Push(item(1000 + i)); err != nil {
					b.Fatal(err)
				}
				if _, ok := pop(q, t0.Add(time.Duration(1000+i)*time.Millisecond)); !ok {
					b.Fatal("empty")
				}
			}
		})
	}
}
