package share

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/foresight-router/foresight/internal/wire"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// FormatVersion is the version of the samples file this producer writes and the only one it
// reads. A producer whose samples need other fields writes another version; during a rolling
// upgrade each version skips the other's files (with a warning) instead of misreading them.
const FormatVersion = 1

// Limits a samples file must respect to be read: a larger one is not one a producer wrote.
const (
	// MaxRows bounds the rows of one file (a writer's shareMaxRows is at most this).
	MaxRows = 1_000_000
	// MaxFileBytes bounds a file's size; a row takes about 100–200 bytes.
	MaxFileBytes = 256 << 20
	// maxString bounds a request or endpoint ID, and a replica ID.
	maxString = 1024
)

var (
	headMagic = [8]byte{'F', 'S', 'S', 'A', 'M', 'P', 'L', 'E'}
	footMagic = [8]byte{'F', 'S', 'S', 'D', 'O', 'N', 'E', '\n'}
)

// footerLen is the footer's size: the payload's length (8 bytes), its SHA-256 (32) and footMagic.
const footerLen = 8 + sha256.Size + len(footMagic)

// ErrInvalid marks a file that is not a whole samples file of this format: torn or truncated,
// corrupt (checksum), foreign (another magic or name) or of another format version. Such a file
// is skipped, never trusted.
var ErrInvalid = errors.New("not a valid samples file")

// File is one published file: the rows a replica observed between two exchanges.
type File struct {
	// ReplicaID and Seq are the writer and the file's place in its sequence (also in the name).
	ReplicaID string
	Seq       uint64
	// Nonce is a random number the writer draws when it starts: two writers under one replica ID
	// (a configuration mistake) tell their files apart by it.
	Nonce   uint64
	Samples []sdk.Sample
}

// Encode writes f as a samples file: a header (magic, format version, nonce, sequence, row count
// and replica ID), the rows, and a footer with the length and SHA-256 of everything before it,
// so that a reader detects a torn, truncated or altered file.
//
// A row keeps what training reads of a sample and nothing else: the request's ID (the held-out
// split hashes it), length, max_tokens and streaming flag, the endpoint's ID and whole state, the
// observed TTFT, TPOT and output tokens, and the dispatch time. Prefix hashes, labels, SLOs and
// the prediction made at dispatch stay with the replica that observed the request.
func Encode(f *File) ([]byte, error) {
	if len(f.Samples) > MaxRows {
		return nil, fmt.Errorf("%d rows in one file; at most %d", len(f.Samples), MaxRows)
	}
	if len(f.ReplicaID) > maxString {
		return nil, fmt.Errorf("replica ID of %d bytes; at most %d", len(f.ReplicaID), maxString)
	}
	b := make([]byte, 0, 64+len(f.Samples)*128)
	b = append(b, headMagic[:]...)
	b = binary.LittleEndian.AppendUint16(b, FormatVersion)
	b = binary.LittleEndian.AppendUint64(b, f.Nonce)
	b = binary.LittleEndian.AppendUint64(b, f.Seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Samples)))
	b = wire.AppendString(b, f.ReplicaID)
	for i := range f.Samples {
		b = appendRow(b, &f.Samples[i])
	}
	sum := sha256.Sum256(b)
	n := uint64(len(b))
	b = binary.LittleEndian.AppendUint64(b, n)
	b = append(b, sum[:]...)
	return append(b, footMagic[:]...), nil
}

// Decode parses a samples file. Any file that is not a whole, unaltered file of FormatVersion is
// an error wrapping ErrInvalid that says what is wrong; whatever the bytes, it never panics.
func Decode(data []byte) (*File, error) {
	if n := min(len(data), len(headMagic)); !bytes.Equal(data[:n], headMagic[:n]) {
		return nil, fmt.Errorf("%w: foreign file (it does not start with the samples magic)", ErrInvalid)
	}
	if len(data) < len(headMagic)+2+footerLen {
		return nil, fmt.Errorf("%w: torn or truncated (%d bytes, shorter than a header and footer)", ErrInvalid, len(data))
	}
	foot := data[len(data)-footerLen:]
	if !bytes.Equal(foot[8+sha256.Size:], footMagic[:]) {
		return nil, fmt.Errorf("%w: torn or truncated (no footer at its end)", ErrInvalid)
	}
	payload := data[:len(data)-footerLen]
	if n := binary.LittleEndian.Uint64(foot); n != uint64(len(payload)) {
		return nil, fmt.Errorf("%w: torn (the footer records %d bytes before it, the file has %d)", ErrInvalid, n, len(payload))
	}
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], foot[8:8+sha256.Size]) {
		return nil, fmt.Errorf("%w: corrupt (checksum mismatch)", ErrInvalid)
	}
	r := wire.NewReader(payload[len(headMagic):], maxString)
	if v := r.U16(); v != FormatVersion {
		return nil, fmt.Errorf("%w: format version %d; this producer reads version %d (another producer version: upgrade them all)", ErrInvalid, v, FormatVersion)
	}
	f := &File{Nonce: r.U64(), Seq: r.U64()}
	rows := r.U32()
	f.ReplicaID = r.String()
	if r.Err() == nil && rows > MaxRows {
		return nil, fmt.Errorf("%w: %d rows, at most %d", ErrInvalid, rows, MaxRows)
	}
	if r.Err() == nil {
		f.Samples = make([]sdk.Sample, 0, min(int(rows), r.Len()/20+1))
	}
	for i := 0; r.Err() == nil && i < int(rows); i++ {
		var s sdk.Sample
		readRow(r, &s)
		f.Samples = append(f.Samples, s)
	}
	switch {
	case r.Err() != nil:
		return nil, fmt.Errorf("%w: malformed: %w", ErrInvalid, r.Err())
	case r.Len() != 0:
		return nil, fmt.Errorf("%w: malformed: %d bytes after the last row", ErrInvalid, r.Len())
	}
	return f, nil
}

// Row layout: the request's and the endpoint's IDs (length-prefixed), a flags byte (bit 0:
// streaming), the integers as zig-zag varints and the floats as IEEE 754 bits, in the order below.
func appendRow(b []byte, s *sdk.Sample) []byte {
	b = wire.AppendString(b, s.Request.ID)
	b = wire.AppendString(b, s.EndpointID)
	var flags byte
	if s.Request.Streaming {
		flags |= 1
	}
	b = append(b, flags)
	st := &s.State
	for _, v := range [...]int64{s.Request.InputTokens, s.Request.MaxOutputTokens, st.Waiting, st.Running,
		st.InflightRequests, st.PrefillTokensInFlight, st.DecodeTokensInFlight, st.DispatchedSinceScrape,
		s.OutputTokens, unixNano(s.DispatchedAt)} {
		b = binary.AppendVarint(b, v)
	}
	for _, v := range [...]float64{st.KVCacheUsage, st.PrefixMatch, st.MinRunningTPOTSLOMs, st.MetricsAgeMs,
		st.LastOutputAgeMs, s.ActualTTFTMs, s.ActualTPOTMs} {
		b = wire.AppendF64(b, v)
	}
	return b
}

func readRow(r *wire.Reader, s *sdk.Sample) {
	s.Request.ID = r.String()
	s.EndpointID = r.String()
	flags := r.Byte()
	if flags&^1 != 0 && r.Err() == nil {
		r.Fail(fmt.Errorf("unknown row flags %#x", flags))
	}
	s.Request.Streaming = flags&1 != 0
	st := &s.State
	for _, p := range [...]*int64{&s.Request.InputTokens, &s.Request.MaxOutputTokens, &st.Waiting, &st.Running,
		&st.InflightRequests, &st.PrefillTokensInFlight, &st.DecodeTokensInFlight, &st.DispatchedSinceScrape,
		&s.OutputTokens} {
		*p = r.Varint()
	}
	if ns := r.Varint(); ns != 0 {
		s.DispatchedAt = time.Unix(0, ns).UTC()
	}
	for _, p := range [...]*float64{&st.KVCacheUsage, &st.PrefixMatch, &st.MinRunningTPOTSLOMs, &st.MetricsAgeMs,
		&st.LastOutputAgeMs, &s.ActualTTFTMs, &s.ActualTPOTMs} {
		*p = r.F64()
		if r.Err() == nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
			r.Fail(errors.New("a row holds a non-finite number"))
		}
	}
}

// unixNano is t in Unix nanoseconds, 0 for the zero time (which has no Unix nanoseconds).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
