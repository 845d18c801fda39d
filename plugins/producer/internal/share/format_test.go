package share

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rows returns n samples with every field a file carries set to something distinct, and the
// fields it does not carry set too (they must come back empty).
func rows(rng *rand.Rand, n int, tag string) []sdk.Sample {
	out := make([]sdk.Sample, n)
	for i := range out {
		out[i] = sdk.Sample{
			Request: sdk.Request{ID: tag + "-" + strconv.Itoa(i), Model: "m", InputTokens: int64(rng.IntN(9000)),
				MaxOutputTokens: int64(rng.IntN(500)), Streaming: i%7 != 0, SLO: sdk.SLO{TTFTMs: 100},
				PrefixBlockHashes: []uint64{1, 2}, Labels: map[string]string{"a": "b"}, SessionID: "s", Priority: -1},
			EndpointID: "vllm-" + strconv.Itoa(i%4) + ":8000",
			State: sdk.EndpointState{KVCacheUsage: rng.Float64(), Waiting: int64(rng.IntN(20)), Running: int64(rng.IntN(50)),
				InflightRequests: int64(rng.IntN(50)), PrefillTokensInFlight: rng.Int64N(1 << 20), DecodeTokensInFlight: rng.Int64N(1 << 20),
				PrefixMatch: float64(rng.IntN(5)) / 4, MinRunningTPOTSLOMs: 25, MetricsAgeMs: rng.Float64() * 50,
				LastOutputAgeMs: -1 + rng.Float64()*30, DispatchedSinceScrape: int64(rng.IntN(9))},
			Predicted:    sdk.Prediction{Valid: true, TTFTMs: 1, TPOTMs: 2},
			ActualTTFTMs: 10 + rng.Float64()*500, ActualTPOTMs: rng.Float64() * 40, OutputTokens: int64(rng.IntN(900)),
			DispatchedAt: t0.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return out
}

// carried is s as a file gives it back: what training reads, nothing else.
func carried(s sdk.Sample) sdk.Sample {
	s.Request = sdk.Request{ID: s.Request.ID, InputTokens: s.Request.InputTokens, MaxOutputTokens: s.Request.MaxOutputTokens,
		Streaming: s.Request.Streaming}
	s.Predicted = sdk.Prediction{}
	return s
}

func encode(t testing.TB, f *File) []byte {
	t.Helper()
	b, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	in := &File{ReplicaID: "router-7f9c-x2v.pod", Seq: 42, Nonce: 0xdeadbeef, Samples: rows(rand.New(rand.NewPCG(1, 1)), 300, "r")}
	in.Samples[3].DispatchedAt = time.Time{} // a sample without a dispatch time keeps none
	out, err := Decode(encode(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if out.ReplicaID != in.ReplicaID || out.Seq != in.Seq || out.Nonce != in.Nonce || len(out.Samples) != len(in.Samples) {
		t.Fatalf("header: got %q %d %x %d rows", out.ReplicaID, out.Seq, out.Nonce, len(out.Samples))
	}
	for i := range in.Samples {
		want := carried(in.Samples[i])
		got := out.Samples[i]
		if !got.DispatchedAt.Equal(want.DispatchedAt) {
			t.Fatalf("row %d: dispatched at %v, want %v", i, got.DispatchedAt, want.DispatchedAt)
		}
		got.DispatchedAt, want.DispatchedAt = time.Time{}, time.Time{}
		if got.Request.Labels != nil || got.Request.PrefixBlockHashes != nil {
			t.Fatalf("row %d carried labels or prefix hashes", i)
		}
		if g, w := got, want; g.Request.ID != w.Request.ID || g.EndpointID != w.EndpointID || g.State != w.State ||
			g.Request.InputTokens != w.Request.InputTokens || g.Request.MaxOutputTokens != w.Request.MaxOutputTokens ||
			g.Request.Streaming != w.Request.Streaming || g.ActualTTFTMs != w.ActualTTFTMs || g.ActualTPOTMs != w.ActualTPOTMs ||
			g.OutputTokens != w.OutputTokens || g.Predicted != w.Predicted || g.Request.SLO != w.Request.SLO {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if n := len(encode(t, in)) / len(in.Samples); n > 160 {
		t.Errorf("%d bytes a row; the README's disk figures assume at most 160", n)
	}
}

// TestDecodeRejectsWhatIsNotWhole: every prefix of a file (a torn or truncated write), every
// single flipped byte (corruption), foreign files and files of another format version are
// rejected, each with ErrInvalid and a reason.
func TestDecodeRejectsWhatIsNotWhole(t *testing.T) {
	good := encode(t, &File{ReplicaID: "a", Seq: 1, Samples: rows(rand.New(rand.NewPCG(2, 2)), 5, "x")})
	for n := range len(good) {
		if _, err := Decode(good[:n]); !errors.Is(err, ErrInvalid) {
			t.Fatalf("a file torn at byte %d of %d: %v", n, len(good), err)
		}
	}
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x20
		if _, err := Decode(bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := Decode(append(bytes.Clone(good), '\n')); !errors.Is(err, ErrInvalid) {
		t.Errorf("a byte appended: %v", err)
	}
	for name, data := range map[string][]byte{
		"empty":   nil,
		"json":    []byte(`{"samples":[]}`),
		"model":   []byte("tree\nversion=v3\n"),
		"garbage": bytes.Repeat([]byte{0xff}, 200),
	} {
		if _, err := Decode(data); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Another format version, otherwise whole: a producer of another version wrote it.
	v2 := reseal(good, func(b []byte) { binary.LittleEndian.PutUint16(b[len(headMagic):], FormatVersion+1) })
	if _, err := Decode(v2); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "format version 2") {
		t.Errorf("format version 2: %v", err)
	}
	// Whole and checksummed, but a row holds NaN: a writer's bug, not to be trusted either.
	in := &File{ReplicaID: "a", Seq: 1, Samples: rows(rand.New(rand.NewPCG(3, 3)), 1, "x")}
	in.Samples[0].ActualTTFTMs = math.NaN()
	if _, err := Decode(encode(t, in)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("a NaN latency: %v", err)
	}
}

// reseal applies edit to a file's payload and writes a footer that matches it again.
func reseal(file []byte, edit func([]byte)) []byte {
	payload := bytes.Clone(file[:len(file)-footerLen])
	edit(payload)
	sum := sha256.Sum256(payload)
	out := binary.LittleEndian.AppendUint64(payload, uint64(len(payload)))
	out = append(out, sum[:]...)
	return append(out, footMagic[:]...)
}

func TestEncodeRefusesWhatNoReaderTakes(t *testing.T) {
	if _, err := Encode(&File{ReplicaID: strings.Repeat("a", maxString+1)}); err == nil {
		t.Error("an overlong replica ID was encoded")
	}
	if _, err := Encode(&File{ReplicaID: "a", Samples: make([]sdk.Sample, MaxRows+1)}); err == nil {
		t.Error("more than MaxRows rows were encoded")
	}
}

// FuzzDecode: whatever a payload holds behind a matching footer (the checksum would stop a
// fuzzer at the door otherwise), Decode returns a file or ErrInvalid, never panics, and a file
// it accepts encodes to one that decodes the same.
func FuzzDecode(f *testing.F) {
	payload := func(file []byte) []byte { return file[:len(file)-footerLen] }
	good := encode(f, &File{ReplicaID: "a", Seq: 3, Nonce: 9, Samples: rows(rand.New(rand.NewPCG(4, 4)), 3, "x")})
	f.Add(payload(good))
	f.Add(payload(good)[:len(good)-footerLen-1])
	f.Add(payload(encode(f, &File{ReplicaID: "b", Seq: 1})))
	f.Add([]byte("FSSAMPLE"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		got, err := Decode(reseal(append(payload, make([]byte, footerLen)...), func([]byte) {}))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error without ErrInvalid: %v", err)
			}
			return
		}
		again, err := Decode(encode(t, got))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("decoded %+v, encoded and decoded again %+v", got, again)
		}
	})
}

// benchRows are rows with IDs of a live router's sizes at most: a 32-hex-digit request ID (the
// router draws 16; a client may send its own), an endpoint address.
func benchRows(n int) []sdk.Sample {
	out := rows(rand.New(rand.NewPCG(5, 5)), n, "")
	for i := range out {
		out[i].Request.ID = strconv.FormatUint(rand.Uint64(), 16) + strconv.FormatUint(rand.Uint64(), 16)
		out[i].EndpointID = "10.42.17.203:8000"
	}
	return out
}

// BenchmarkEncode and BenchmarkDecode time a file of 10,000 rows and report its bytes a row.
func BenchmarkEncode(b *testing.B) {
	f := &File{ReplicaID: "router-7d9f8c6b5-x2vqp", Seq: 1, Samples: benchRows(10_000)}
	var n int
	for b.Loop() {
		data, err := Encode(f)
		if err != nil {
			b.Fatal(err)
		}
		n = len(data)
	}
	b.ReportMetric(float64(n)/10_000, "bytes/row")
}

func BenchmarkDecode(b *testing.B) {
	data := encode(b, &File{ReplicaID: "router-7d9f8c6b5-x2vqp", Seq: 1, Samples: benchRows(10_000)})
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data))/10_000, "bytes/row")
}
