package wire

import (
	"testing"

	"google.golang.org/grpc/mem"
)

// TestBufferPoolFitsTheMessage: a reused buffer is at most twice the message, where gRPC's default
// pool hands out (and clears) a whole MiB for anything over 32 KiB.
func TestBufferPoolFitsTheMessage(t *testing.T) {
	tests := []struct {
		size, maxCap int
	}{
		{100, 256},
		{300, 1 << 10},
		{5 << 10, 8 << 10},
		{33 << 10, 64 << 10}, // the default: 1 MiB
		{58 << 10, 64 << 10}, // a round of 8 cycles at 100 endpoints
		{300 << 10, 512 << 10},
		{1 << 20, 1 << 20},
	}
	for _, tc := range tests {
		for range 2 { // the second Get reuses the buffer the first put back
			b := BufferPool.Get(tc.size)
			if len(*b) != tc.size || cap(*b) > tc.maxCap {
				t.Errorf("Get(%d): len %d cap %d, want len %d and cap at most %d", tc.size, len(*b), cap(*b), tc.size, tc.maxCap)
			}
			BufferPool.Put(b)
		}
	}
	if b := mem.DefaultBufferPool().Get(33 << 10); cap(*b) != 1<<20 {
		t.Logf("gRPC's default pool now gives %d bytes for 33 KiB: the reason for BufferPool may be gone", cap(*b))
	}
}

// BenchmarkBufferPool takes and returns a 58 KB buffer (a round of 8 cycles at 100 endpoints):
// `go test -run '^$' -bench BufferPool ./plugins/sdk/internal/wire`.
func BenchmarkBufferPool(b *testing.B) {
	for _, p := range []struct {
		name string
		pool mem.BufferPool
	}{{"default", mem.DefaultBufferPool()}, {"tiered", BufferPool}} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				buf := p.pool.Get(58 << 10)
				p.pool.Put(buf)
			}
		})
	}
}
