package kvevents

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// realisticBatch is an engine step under load: 16 Stored events of 8 blocks of 16 tokens, chained
// to a parent, and 16 Removed events of 8 blocks, with vLLM's 64-bit hashes.
func realisticBatch() *Batch {
	b := &Batch{TS: 1.7e9}
	h := uint64(0x9e3779b97f4a7c15)
	next := func() uint64 { h ^= h << 13; h ^= h >> 7; h ^= h << 17; return h }
	for range 16 {
		ev := Event{Kind: Stored, Parent: next(), HasParent: true, BlockSize: 16, Medium: "GPU"}
		for range 8 {
			ev.Hashes = append(ev.Hashes, next())
		}
		for i := range 8 * 16 {
			ev.Tokens = append(ev.Tokens, uint32(next()%150000+uint64(i%2)))
		}
		b.Events = append(b.Events, ev)
	}
	for range 16 {
		ev := Event{Kind: Removed, Medium: "GPU"}
		for range 8 {
			ev.Hashes = append(ev.Hashes, next())
		}
		b.Events = append(b.Events, ev)
	}
	return b
}

// blockEvents counts the hashes in b's events.
func blockEvents(b *Batch) int {
	n := 0
	for _, ev := range b.Events {
		n += len(ev.Hashes)
	}
	return n
}

// BenchmarkDecode decodes realisticBatch's payload into a reused batch.
func BenchmarkDecode(b *testing.B) {
	src := realisticBatch()
	payload := AppendBatch(nil, src)
	var batch Batch
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(payload, &batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(blockEvents(src))*float64(b.N)/b.Elapsed().Seconds(), "blockevents/s")
}

// BenchmarkDecodeMsgpackV5 decodes the same payload with msgpack/v5's low-level Decoder (array
// form only, no error context), to compare with the hand-written reader Decode uses.
func BenchmarkDecodeMsgpackV5(b *testing.B) {
	src := realisticBatch()
	payload := AppendBatch(nil, src)
	var batch Batch
	var rd bytes.Reader
	dec := msgpack.NewDecoder(&rd)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(payload)
		dec.Reset(&rd)
		if err := decodeV5(dec, &batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(blockEvents(src))*float64(b.N)/b.Elapsed().Seconds(), "blockevents/s")
}

// decodeV5 is Decode's array form written with msgpack/v5's Decoder.
func decodeV5(d *msgpack.Decoder, b *Batch) error {
	if _, err := d.DecodeArrayLen(); err != nil {
		return err
	}
	var err error
	if b.TS, err = d.DecodeFloat64(); err != nil {
		return err
	}
	n, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	b.Events = grow(b.Events, n)
	for i := range b.Events {
		ev := &b.Events[i]
		*ev = Event{Hashes: ev.Hashes[:0], Tokens: ev.Tokens[:0]}
		fields, err := d.DecodeArrayLen()
		if err != nil {
			return err
		}
		tag, err := d.DecodeString() // allocates; DecodeBytes would too
		if err != nil {
			return err
		}
		ev.Kind = kindOf([]byte(tag))
		for f := 1; f < fields; f++ {
			switch {
			case f == 1 && ev.Kind != Cleared:
				k, err := d.DecodeArrayLen()
				if err != nil {
					return err
				}
				ev.Hashes = grow(ev.Hashes, k)
				for j := range ev.Hashes {
					if ev.Hashes[j], err = d.DecodeUint64(); err != nil {
						return err
					}
				}
			case f == 3 && ev.Kind == Stored:
				k, err := d.DecodeArrayLen()
				if err != nil {
					return err
				}
				ev.Tokens = grow(ev.Tokens, k)
				for j := range ev.Tokens {
					v, err := d.DecodeUint32()
					if err != nil {
						return err
					}
					ev.Tokens[j] = v
				}
			default:
				if err := d.Skip(); err != nil {
					return err
				}
			}
		}
	}
	rank, err := d.DecodeInt()
	b.DPRank = rank
	return err
}

// BenchmarkAppendBatch encodes realisticBatch into a reused buffer.
func BenchmarkAppendBatch(b *testing.B) {
	src := realisticBatch()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendBatch(buf[:0], src)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(blockEvents(src))*float64(b.N)/b.Elapsed().Seconds(), "blockevents/s")
}

// BenchmarkSubscriber publishes realisticBatch over loopback to a Subscriber and measures what
// it handles end to end: framing, reading, decoding, sequencing. Batches go in bursts of 256 that
// the subscriber drains before the next, below the publisher's queue, so that none is dropped.
func BenchmarkSubscriber(b *testing.B) {
	pub, err := NewPublisher("tcp://127.0.0.1:0", "", "", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	var handled, blocks, last atomic.Int64
	sub, err := NewSubscriber(SubscriberConfig{Address: pub.Addr(), Handle: func(m *Message) {
		blocks.Add(int64(blockEvents(&m.Batch)))
		last.Store(int64(m.Batch.Seq))
		handled.Add(1)
	}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sub.Run(ctx) }()
	defer func() { cancel(); <-done }()
	src := realisticBatch()
	waitUntil := func(n int64) {
		for deadline := time.Now().Add(10 * time.Second); handled.Load() < n; time.Sleep(50 * time.Microsecond) {
			if time.Now().After(deadline) {
				b.Fatalf("handled %d of %d batches: %+v", handled.Load(), n, sub.Stats())
			}
		}
	}
	// The subscription takes effect a moment after connecting: publish until one arrives.
	for deadline := time.Now().Add(10 * time.Second); handled.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("no batch arrived")
		}
		if err := pub.Publish(src); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); last.Load() != int64(src.Seq); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the first batches did not arrive")
		}
	}
	base, baseBlocks := handled.Load(), blocks.Load()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		burst := min(256, b.N-sent)
		for range burst {
			if err := pub.Publish(src); err != nil {
				b.Fatal(err)
			}
		}
		sent += burst
		waitUntil(base + int64(sent))
	}
	b.StopTimer()
	if st := sub.Stats(); st.Missed != 0 || st.DecodeErrors != 0 {
		b.Fatalf("stats %+v", st)
	}
	b.ReportMetric(float64(blocks.Load()-baseBlocks)/b.Elapsed().Seconds(), "blockevents/s")
}
