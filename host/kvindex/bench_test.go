package kvindex

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/foresight-router/foresight/host/kvevents"
	"github.com/foresight-router/foresight/host/tokenize"
)

// payloads returns n encoded batches as an engine under load publishes them: per batch, 8
// requests stored in two chunks of 4 blocks each (16 tokens a block) continuing earlier chunks,
// and 64 blocks of older requests removed, so that the record stays at about the same size.
func payloads(n int) [][]byte {
	const bs, blocks = 16, 8
	var out [][]byte
	var live [][]uint64 // engine hashes of stored requests, oldest first
	seq := uint32(0)
	for range n {
		var b kvevents.Batch
		for range 8 {
			seq++
			tokens := make([]uint32, blocks*bs)
			for i := range tokens {
				tokens[i] = seq*7919 + uint32(i)
			}
			keys := tokenize.BlockKeys(nil, 0, tokens, bs)
			hashes := make([]uint64, len(keys))
			for i, k := range keys {
				hashes[i] = engineHash(k)
			}
			b.Events = append(b.Events,
				kvevents.Event{Kind: kvevents.Stored, Hashes: hashes[:4], Tokens: tokens[:4*bs], BlockSize: bs, Medium: "GPU"},
				kvevents.Event{Kind: kvevents.Stored, Hashes: hashes[4:], Parent: hashes[3], HasParent: true, Tokens: tokens[4*bs:], BlockSize: bs, Medium: "GPU"})
			live = append(live, hashes)
		}
		if len(live) > 64 {
			rm := kvevents.Event{Kind: kvevents.Removed, Medium: "GPU"}
			for _, h := range live[:8] {
				rm.Hashes = append(rm.Hashes, h...)
			}
			live = live[8:]
			b.Events = append(b.Events, rm)
		}
		out = append(out, kvevents.AppendBatch(nil, &b))
	}
	return out
}

// BenchmarkApply decodes and applies event batches to one endpoint's record, as its subscriber's
// goroutine does, and reports the block events (stored and removed hashes) applied per second.
// Run with -cpu 1: the target is 200,000 a second on one core.
func BenchmarkApply(b *testing.B) {
	msgs := payloads(512)
	x := New(MaxCapacity)
	var m kvevents.Message
	blocks := 0
	b.ResetTimer()
	for i := range b.N {
		if err := kvevents.Decode(msgs[i%len(msgs)], &m.Batch); err != nil {
			b.Fatal(err)
		}
		for _, ev := range m.Batch.Events {
			blocks += len(ev.Hashes)
		}
		x.Apply("e", &m)
	}
	b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blocks/s")
}

// TestMemoryPerBlock measures the heap a record holds per cached block (run with -v; the figure
// is for docs/design.md): 2^18 blocks stored, the heap read before and after.
func TestMemoryPerBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~40 MB")
	}
	const n = 1 << 18
	hashes, keys := make([]uint64, n), make([]uint64, n)
	for i := range hashes {
		hashes[i], keys[i] = engineHash(uint64(i)), uint64(i)*0x9e3779b97f4a7c15
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := New(MaxCapacity)
	x.Store("e", hashes, keys)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if x.Len("e") != n {
		t.Fatalf("%d blocks held, want %d", x.Len("e"), n)
	}
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Log(fmt.Sprintf("%.1f bytes of heap per cached block (%d blocks)", per, n))
	runtime.KeepAlive(x)
}
