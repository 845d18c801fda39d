package kvevents

import (
	"bytes"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vmihailenco/msgpack/v5"
)

// mp builds msgpack payloads with msgpack/v5's Encoder, as msgspec would lay them out, so that
// the hand-written reader is checked against another implementation.
type mp struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

func newMP() *mp {
	m := &mp{}
	m.enc = msgpack.NewEncoder(&m.buf)
	return m
}

func (m *mp) do(err error) *mp {
	if err != nil {
		panic(err)
	}
	return m
}

func (m *mp) arr(n int) *mp     { return m.do(m.enc.EncodeArrayLen(n)) }
func (m *mp) mapn(n int) *mp    { return m.do(m.enc.EncodeMapLen(n)) }
func (m *mp) str(s string) *mp  { return m.do(m.enc.EncodeString(s)) }
func (m *mp) bin(b []byte) *mp  { return m.do(m.enc.EncodeBytes(b)) }
func (m *mp) uint(v uint64) *mp { return m.do(m.enc.EncodeUint(v)) }
func (m *mp) int(v int64) *mp   { return m.do(m.enc.EncodeInt(v)) }
func (m *mp) f64(v float64) *mp { return m.do(m.enc.EncodeFloat64(v)) }
func (m *mp) null() *mp         { return m.do(m.enc.EncodeNil()) }
func (m *mp) any(v any) *mp     { return m.do(m.enc.Encode(v)) }
func (m *mp) raw(b ...byte) *mp { m.buf.Write(b); return m }
func (m *mp) bytes() []byte     { return bytes.Clone(m.buf.Bytes()) }
func (m *mp) uints(v ...uint64) *mp {
	m.arr(len(v))
	for _, x := range v {
		m.uint(x)
	}
	return m
}

// equal compares batches, an empty slice equal to a nil one.
var equal = cmpopts.EquateEmpty()

func decodeOK(t *testing.T, payload []byte) Batch {
	t.Helper()
	var b Batch
	if err := Decode(payload, &b); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return b
}

func TestDecodeArrayForm(t *testing.T) {
	m := newMP().arr(3).f64(1712345678.25).arr(4)
	// A Stored with every field of the latest releases, a negative (signed) int hash among them.
	m.arr(12).str("BlockStored").arr(3).uint(math.MaxUint64).int(-2).uint(7).
		uint(99).uints(1, 200, 70000, 1<<31).int(1).
		null().str("GPU").null().arr(1).arr(2).str("lora").int(3).uint(1).str("full_attention").null()
	m.arr(4).str("BlockRemoved").uints(5, 6).str("CPU").uint(2)
	m.arr(1).str("AllBlocksCleared")
	m.arr(2).str("BlockStored").uints(9) // trailing fields omitted
	m.uint(3)
	got := decodeOK(t, m.bytes())
	want := Batch{TS: 1712345678.25, DPRank: 3, Events: []Event{
		{Kind: Stored, Hashes: []uint64{math.MaxUint64, math.MaxUint64 - 1, 7}, Parent: 99, HasParent: true,
			Tokens: []uint32{1, 200, 70000, 1 << 31}, BlockSize: 1, Medium: "GPU", Group: 1},
		{Kind: Removed, Hashes: []uint64{5, 6}, Medium: "CPU", Group: 2},
		{Kind: Cleared},
		{Kind: Stored, Hashes: []uint64{9}},
	}}
	if d := cmp.Diff(want, got, equal); d != "" {
		t.Errorf("batch (-want +got):\n%s", d)
	}
}

func TestDecodeOlderForms(t *testing.T) {
	// No data_parallel_rank; a Stored of the releases before lora_name (stopping after medium) with
	// a nil parent; one of the first releases, num_toks_per_block in block_size's place and no
	// medium; a Removed without medium.
	m := newMP().arr(2).f64(2).arr(3)
	m.arr(7).str("BlockStored").uints(10, 11).null().uints(1, 2, 3, 4).uint(2).null().str("GPU")
	m.arr(6).str("BlockStored").uints(12).uint(11).uints(5, 6).uint(2).null()
	m.arr(2).str("BlockRemoved").uints(10)
	got := decodeOK(t, m.bytes())
	want := Batch{TS: 2, Events: []Event{
		{Kind: Stored, Hashes: []uint64{10, 11}, Tokens: []uint32{1, 2, 3, 4}, BlockSize: 2, Medium: "GPU"},
		{Kind: Stored, Hashes: []uint64{12}, Parent: 11, HasParent: true, Tokens: []uint32{5, 6}, BlockSize: 2},
		{Kind: Removed, Hashes: []uint64{10}},
	}}
	if d := cmp.Diff(want, got, equal); d != "" {
		t.Errorf("batch (-want +got):\n%s", d)
	}
}

func TestDecodeBytesHashes(t *testing.T) {
	sha := bytes.Repeat([]byte{0xaa}, 24)
	sha = append(sha, 1, 2, 3, 4, 5, 6, 7, 8)
	m := newMP().arr(3).f64(0).arr(1)
	m.arr(7).str("BlockStored").arr(3).bin(sha).bin([]byte{1, 2, 3}).str("\x01\x00").bin(sha[:8]).
		uints(1).uint(1).null().null()
	m.uint(0)
	got := decodeOK(t, m.bytes())
	want := []uint64{0x0102030405060708, 0x010203, 0x0100}
	if d := cmp.Diff(want, got.Events[0].Hashes); d != "" {
		t.Errorf("hashes (-want +got):\n%s", d)
	}
	if got.Events[0].Parent != 0xaaaaaaaaaaaaaaaa || !got.Events[0].HasParent {
		t.Errorf("parent = %#x, %v; want 0xaaaaaaaaaaaaaaaa", got.Events[0].Parent, got.Events[0].HasParent)
	}
}

func TestDecodeSkipsUnknownTags(t *testing.T) {
	m := newMP().arr(3).f64(0).arr(4)
	m.arr(3).str("BlockMoved").any(map[string]any{"x": []any{1, "y", nil, 2.5}}).uint(7)
	m.arr(2).str("BlockRemoved").uints(1)
	m.mapn(2).str("type").str("Future").str("block_hashes").uints(4, 5)
	m.arr(1).str("AllBlocksCleared")
	m.uint(0)
	got := decodeOK(t, m.bytes())
	want := Batch{Skipped: 2, Events: []Event{{Kind: Removed, Hashes: []uint64{1}}, {Kind: Cleared}}}
	if d := cmp.Diff(want, got, equal); d != "" {
		t.Errorf("batch (-want +got):\n%s", d)
	}
}

func TestDecodeMapForm(t *testing.T) {
	m := newMP().mapn(4).str("events").arr(4)
	// Keys in any order, "type" not first, unknown keys with nested values, an int key.
	m.mapn(9).str("block_hashes").uints(1, 2).str("extra_keys").any([]any{[]any{"a", 1}}).
		str("type").str("BlockStored").str("token_ids").uints(3, 4, 5, 6).str("parent_block_hash").uint(8).
		str("block_size").uint(2).str("medium").str("GPU").str("group_idx").uint(1).uint(42).str("int key")
	m.mapn(3).str("type").str("BlockStored").str("block_hashes").uints(3).str("num_toks_per_block").uint(4)
	m.mapn(3).str("type").str("BlockRemoved").str("block_hashes").arr(1).bin([]byte{9}).str("medium").null()
	m.mapn(1).str("type").str("AllBlocksCleared")
	m.str("data_parallel_rank").uint(1).str("ts").f64(5.5).str("new_field").any([]any{1, 2})
	got := decodeOK(t, m.bytes())
	want := Batch{TS: 5.5, DPRank: 1, Events: []Event{
		{Kind: Stored, Hashes: []uint64{1, 2}, Parent: 8, HasParent: true, Tokens: []uint32{3, 4, 5, 6}, BlockSize: 2, Medium: "GPU", Group: 1},
		{Kind: Stored, Hashes: []uint64{3}, BlockSize: 4},
		{Kind: Removed, Hashes: []uint64{9}},
		{Kind: Cleared},
	}}
	if d := cmp.Diff(want, got, equal); d != "" {
		t.Errorf("batch (-want +got):\n%s", d)
	}
}

func TestDecodeErrors(t *testing.T) {
	stored := func(m *mp) *mp { return m.arr(3).f64(0).arr(2).arr(1).str("AllBlocksCleared") }
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty", nil, "empty payload"},
		{"int", newMP().uint(3).bytes(), "batch: expected array or map, got int"},
		{"str", newMP().str("x").bytes(), "expected array or map, got str"},
		{"short batch", newMP().arr(1).f64(0).bytes(), "array of 1 fields"},
		{"ts", newMP().arr(2).str("now").arr(0).bytes(), "ts: expected float, got str"},
		{"events nil", newMP().arr(2).f64(0).null().bytes(), "events: expected array, got nil"},
		{"trailing", newMP().arr(2).f64(0).arr(0).uint(1).bytes(), "1 bytes after the batch"},
		{"event type", newMP().arr(2).f64(0).arr(1).uint(1).bytes(), "event 0: expected array or map, got int"},
		{"empty event", newMP().arr(2).f64(0).arr(1).arr(0).bytes(), "event 0: empty array, no tag"},
		{"tag", newMP().arr(2).f64(0).arr(1).arr(1).uint(1).bytes(), "event 0: tag: expected str, got int"},
		{"no type", newMP().arr(2).f64(0).arr(1).mapn(1).str("block_hashes").uints(1).bytes(), `event 0: map without a "type"`},
		{"hash", stored(newMP()).arr(2).str("BlockStored").arr(3).uint(1).uint(2).mapn(0).bytes(),
			"event 1: BlockStored: block_hashes: 2: expected int, bytes or str, got map at byte"},
		{"parent", stored(newMP()).arr(3).str("BlockStored").uints(1).f64(1).bytes(), "event 1: BlockStored: parent_block_hash: expected int, bytes or str, got float"},
		{"negative token", stored(newMP()).arr(4).str("BlockStored").uints(1).null().arr(2).uint(1).int(-1).bytes(),
			"event 1: BlockStored: token_ids: 1: token id -1 out of range"},
		{"big token", stored(newMP()).arr(4).str("BlockStored").uints(1).null().uints(1 << 32).bytes(), "token id 4294967296 out of range"},
		{"block size", stored(newMP()).arr(5).str("BlockStored").uints(1).null().uints().int(-16).bytes(), "block_size: -16 out of range"},
		{"group", stored(newMP()).arr(4).str("BlockRemoved").uints(1).null().uint(math.MaxUint64).bytes(), "group_idx: 18446744073709551615 at byte"},
		{"medium", stored(newMP()).arr(3).str("BlockRemoved").uints(1).uint(1).bytes(), "BlockRemoved: medium: expected str, got int"},
		{"invalid byte", stored(newMP()).arr(3).str("Unknown").null().raw(0xc1).bytes(), `"Unknown": invalid byte 0xc1`},
		{"huge events", newMP().arr(2).f64(0).raw(0xdd, 0xff, 0xff, 0xff, 0xff).bytes(), "array of 4294967295 at byte 10 longer than the 0 bytes left"},
		{"huge hashes", stored(newMP()).arr(2).str("BlockStored").raw(0xdd, 0x10, 0, 0, 0, 1, 2).bytes(), "array of 268435456"},
		{"huge map", newMP().raw(0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'x').bytes(), "map of 4294967295"},
		{"huge str", stored(newMP()).arr(1).raw(0xdb, 0xff, 0xff, 0xff, 0xff, 'B').bytes(), "tag: truncated"},
		{"huge skipped", stored(newMP()).arr(2).str("Unknown").raw(0xdd, 0xff, 0xff, 0xff, 0xff).bytes(), "holds more values than the 0 bytes left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Batch
			err := Decode(tc.payload, &b)
			if err == nil || !strings.HasPrefix(err.Error(), "kvevents: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestDecodeTruncated decodes every proper prefix of valid payloads, in both forms: each must
// fail, none panic.
func TestDecodeTruncated(t *testing.T) {
	for _, payload := range seedPayloads() {
		var b Batch
		for n := range len(payload) {
			if err := Decode(payload[:n], &b); err == nil {
				t.Fatalf("Decode of %d of %d bytes succeeded", n, len(payload))
			}
		}
	}
}

// TestDecodeHugeClaimAllocates checks that a short payload claiming billions of hashes allocates
// next to nothing before failing.
func TestDecodeHugeClaimAllocates(t *testing.T) {
	payload := newMP().arr(2).f64(0).arr(1).arr(2).str("BlockStored").raw(0xdd, 0xff, 0xff, 0xff, 0xff).bytes()
	payload = append(payload, bytes.Repeat([]byte{1}, 100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var b Batch
	for range 10 {
		if err := Decode(payload, &b); err == nil {
			t.Fatal("Decode succeeded")
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("10 decodes of %d bytes allocated %d bytes", len(payload), n)
	}
}

func TestDecodeReusesBatch(t *testing.T) {
	payload := AppendBatch(nil, realisticBatch())
	var b Batch
	if err := Decode(payload, &b); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := Decode(payload, &b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode into a used batch allocates %v times", allocs)
	}
	// A smaller batch then a larger one reuse the slots, and leave nothing of the old behind.
	small := &Batch{TS: 1, Events: []Event{{Kind: Removed, Hashes: []uint64{1}}}}
	if err := Decode(AppendBatch(nil, small), &b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(small, &b, equal); d != "" {
		t.Errorf("small batch (-want +got):\n%s", d)
	}
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		b := randomBatch(rng)
		var got Batch
		if err := Decode(AppendBatch(nil, b), &got); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if d := cmp.Diff(b, &got, equal); d != "" {
			t.Fatalf("batch %d (-want +got):\n%s", i, d)
		}
	}
}

// TestAppendBatchIsMsgpack reads AppendBatch's output with msgpack/v5 and checks its layout.
func TestAppendBatchIsMsgpack(t *testing.T) {
	b := &Batch{TS: 1.5, DPRank: 2, Events: []Event{
		{Kind: Stored, Hashes: []uint64{math.MaxUint64}, Tokens: []uint32{1, 2}, BlockSize: 2, Medium: "GPU"},
		{Kind: Removed, Hashes: []uint64{300}, Group: 1},
		{Kind: Cleared},
	}}
	var v any
	if err := msgpack.Unmarshal(AppendBatch(nil, b), &v); err != nil {
		t.Fatal(err)
	}
	want := []any{1.5, []any{
		[]any{"BlockStored", []any{uint64(math.MaxUint64)}, nil, []any{int8(1), int8(2)}, int8(2), nil, "GPU"},
		[]any{"BlockRemoved", []any{uint16(300)}, nil, int8(1)},
		[]any{"AllBlocksCleared"},
	}, int8(2)}
	if d := cmp.Diff(want, v); d != "" {
		t.Errorf("layout (-want +got):\n%s", d)
	}
}

// randomBatch is a batch of every kind of event and field value.
func randomBatch(rng *rand.Rand) *Batch {
	b := &Batch{TS: rng.Float64() * 2e9, DPRank: rng.IntN(3)}
	for range rng.IntN(6) {
		ev := Event{Kind: Kind(1 + rng.IntN(3))}
		if ev.Kind != Cleared {
			for range rng.IntN(5) {
				ev.Hashes = append(ev.Hashes, rng.Uint64()>>rng.IntN(64))
			}
			ev.Medium = []string{"", "GPU", "CPU", "disk"}[rng.IntN(4)]
			ev.Group = rng.IntN(2)
		}
		if ev.Kind == Stored {
			ev.BlockSize = rng.IntN(17)
			ev.HasParent = rng.IntN(2) == 0
			if ev.HasParent {
				ev.Parent = rng.Uint64()
			}
			for range len(ev.Hashes) * ev.BlockSize {
				ev.Tokens = append(ev.Tokens, rng.Uint32()>>rng.IntN(32))
			}
		}
		b.Events = append(b.Events, ev)
	}
	return b
}

// seedPayloads are valid payloads of both forms.
func seedPayloads() [][]byte {
	m := newMP().mapn(3).str("ts").f64(1).str("events").arr(2)
	m.mapn(5).str("type").str("BlockStored").str("block_hashes").uints(1, 1<<40).str("parent_block_hash").null().
		str("token_ids").uints(1, 2).str("block_size").uint(1)
	m.mapn(2).str("type").str("BlockRemoved").str("block_hashes").arr(1).bin([]byte("abcdefghij"))
	m.str("data_parallel_rank").uint(0)
	rng := rand.New(rand.NewPCG(3, 4))
	return [][]byte{m.bytes(), AppendBatch(nil, realisticBatch()), AppendBatch(nil, randomBatch(rng)), AppendBatch(nil, randomBatch(rng))}
}

// FuzzDecode checks that Decode never panics and allocates in proportion to its payload: what the
// batch holds is bounded by a multiple of the payload's size.
func FuzzDecode(f *testing.F) {
	for _, p := range seedPayloads() {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var b Batch
		err := Decode(payload, &b)
		held := uintptr(cap(b.Events)) * unsafe.Sizeof(Event{})
		for _, ev := range b.Events[:cap(b.Events)] {
			held += uintptr(cap(ev.Hashes)*8 + cap(ev.Tokens)*4 + len(ev.Medium))
		}
		if held > uintptr(64*len(payload)+4096) {
			t.Fatalf("a payload of %d bytes holds %d bytes", len(payload), held)
		}
		if err != nil {
			return
		}
		// What decoded encodes and decodes to the same (Skipped aside).
		var again Batch
		if err := Decode(AppendBatch(nil, &b), &again); err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		b.Skipped = 0
		if d := cmp.Diff(b, again, equal); d != "" {
			t.Fatalf("re-decoded (-first +again):\n%s", d)
		}
	})
}
