package engine

import (
	"testing"
	"time"
)

// loaded returns a TP 2 engine in steady state: about `running` requests decoding (1,000-token
// prompts from 8 prefix families, 200-token answers), new ones arriving as old ones finish, and
// a KV cache full of cached blocks. next is the id of the next request.
func loaded(b *testing.B, running int) (e *Batch, next uint64) {
	b.Helper()
	cfg, err := Preset("llama-3.1-8b-h100-tp2")
	if err != nil {
		b.Fatal(err)
	}
	cfg.Noise, cfg.Seed = 0.05, 1
	e = newEngine(b, cfg)
	for range 2000 {
		next = topUp(b, e, running, next)
		e.Step(e.NextStep())
	}
	return e, next
}

// topUp adds requests until `running` are in the engine.
func topUp(b *testing.B, e *Batch, running int, next uint64) uint64 {
	m := e.Metrics()
	for n := m.Running + m.Waiting + m.Pending; n < running; n++ {
		family := next % 8
		blocks := make([]uint64, 62) // 1000 tokens: 62 full blocks; the first 40 shared per family
		for i := range blocks {
			if i < 40 {
				blocks[i] = family<<32 | uint64(i)
			} else {
				blocks[i] = next<<32 | uint64(i) | 1<<63
			}
		}
		if err := e.Add(Request{ID: next, InputTokens: 1000, OutputTokens: 200, Blocks: blocks}, e.Clock()); err != nil {
			b.Fatal(err)
		}
		next++
	}
	return next
}

// BenchmarkStep measures one step of a TP 2 engine with 256 requests in flight.
func BenchmarkStep(b *testing.B) {
	e, next := loaded(b, 256)
	b.ReportAllocs()
	b.ResetTimer()
	var simulated time.Duration
	for b.Loop() {
		next = topUp(b, e, 256, next)
		s := e.Step(e.NextStep())
		simulated += s.End - s.Start
	}
	b.ReportMetric(float64(simulated.Microseconds())/float64(b.N), "sim-µs/op")
}

// BenchmarkClone measures Clone of that engine.
func BenchmarkClone(b *testing.B) {
	e, _ := loaded(b, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = e.Clone()
	}
}

// BenchmarkCloneStep measures Clone plus one step on the clone, which pays the copy-on-write
// of every page the step touches.
func BenchmarkCloneStep(b *testing.B) {
	e, _ := loaded(b, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c := e.Clone()
		c.Step(c.NextStep())
	}
}

// BenchmarkStepCacheEvents is BenchmarkStep with the cache-event log on, taken after every step
// as a publisher would.
func BenchmarkStepCacheEvents(b *testing.B) {
	e, next := loaded(b, 256)
	e.RecordCacheEvents()
	var evs []CacheEvent
	b.ReportAllocs()
	b.ResetTimer()
	var simulated time.Duration
	events := 0
	for b.Loop() {
		next = topUp(b, e, 256, next)
		s := e.Step(e.NextStep())
		simulated += s.End - s.Start
		evs = e.TakeCacheEvents(evs[:0])
		events += len(evs)
	}
	b.ReportMetric(float64(simulated.Microseconds())/float64(b.N), "sim-µs/op")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
