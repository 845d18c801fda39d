package stateplane

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/foresight-router/foresight/internal/wire"
)

// A message is one replica's batch of events, or one part of its snapshot, published on
// <prefix>.state.<replica>:
//
//	version    1 byte (messageVersion)
//	replica    string
//	incarnation 8 bytes: drawn when the replica's plane starts; a new one is a restarted replica
//	seq        uvarint: the message's place in the incarnation's sequence, from 1
//	sentAt     varint: Unix nanoseconds when it was published (virtual time in the simulator)
//	events     until the end, each a kind byte and its fields:
//	  dispatch  key (uvarint), endpoint, prefill tokens (uvarint), output tokens (uvarint), TPOT
//	            objective (float64 ms), prompt blocks (count, 8 bytes each)
//	  first     key: the request's first token came
//	  prefill   key, tokens (uvarint): the prompt tokens its endpoint computes changed
//	  finish    key, answer blocks (count, 8 bytes each): it ended, its endpoint caching them
//	  snapshot  epoch (uvarint), last (1 byte), then entries to the end, each: key, endpoint,
//	            prefill, output, TPOT objective, decoding (1 byte), generated tokens (uvarint)
//
// A key names one dispatch of the replica's incarnation (a request's retry, or its two hops, are
// two); request IDs are not shared.
//
// A snapshot part is alone in its message. Strings are wire.AppendString's; numbers
// internal/wire's.
const messageVersion = 1

type kind byte

const (
	kindDispatch kind = 1 + iota
	kindFirst
	kindPrefill
	kindFinish
	kindSnapshot
)

// Limits a message must respect to be applied.
const (
	maxString = 1024
	// maxBlocks bounds one prompt's or answer's blocks: 2^20 blocks are 16M tokens at 16 a
	// block, beyond any context window.
	maxBlocks = 1 << 20
)

// header is a message's header.
type header struct {
	replica     string
	incarnation uint64
	seq         uint64
	sentAt      int64
}

func appendHeader(b []byte, h header) []byte {
	b = append(b, messageVersion)
	b = wire.AppendString(b, h.replica)
	b = binary.LittleEndian.AppendUint64(b, h.incarnation)
	b = binary.AppendUvarint(b, h.seq)
	return binary.AppendVarint(b, h.sentAt)
}

// errVersion marks a message of another format version (a replica of another release).
var errVersion = errors.New("a state message of another format version")

func readHeader(r *wire.Reader) (header, error) {
	if v := r.Byte(); r.Err() == nil && v != messageVersion {
		return header{}, fmt.Errorf("%w (%d; this router reads %d)", errVersion, v, messageVersion)
	}
	h := header{replica: r.String(), incarnation: r.U64(), seq: r.Uvarint(), sentAt: r.Varint()}
	return h, r.Err()
}

// flightFields are what a dispatch or a snapshot entry says of a flight.
type flightFields struct {
	key             uint64
	endpoint        string
	prefill, output int64
	tpotSLOMs       float64
}

func appendFlight(b []byte, f *flightFields) []byte {
	b = binary.AppendUvarint(b, f.key)
	b = wire.AppendString(b, f.endpoint)
	b = binary.AppendUvarint(b, uint64(max(f.prefill, 0)))
	b = binary.AppendUvarint(b, uint64(max(f.output, 0)))
	return wire.AppendF64(b, f.tpotSLOMs)
}

func readFlight(r *wire.Reader, f *flightFields) {
	f.key, f.endpoint = r.Uvarint(), r.String()
	f.prefill, f.output = uvarint63(r), uvarint63(r)
	f.tpotSLOMs = r.F64()
}

// uvarint63 reads a count that must fit an int64.
func uvarint63(r *wire.Reader) int64 {
	v := r.Uvarint()
	if v > 1<<62 {
		r.Fail(errors.New("a count out of range"))
		return 0
	}
	return int64(v)
}

func appendDispatch(b []byte, f *flightFields, blocks []uint64) []byte {
	b = append(b, byte(kindDispatch))
	b = appendFlight(b, f)
	return wire.AppendU64s(b, blocks)
}

func appendFirst(b []byte, key uint64) []byte {
	return binary.AppendUvarint(append(b, byte(kindFirst)), key)
}

func appendPrefill(b []byte, key uint64, tokens int64) []byte {
	b = binary.AppendUvarint(append(b, byte(kindPrefill)), key)
	return binary.AppendUvarint(b, uint64(max(tokens, 0)))
}

func appendFinish(b []byte, key uint64, answer []uint64) []byte {
	b = binary.AppendUvarint(append(b, byte(kindFinish)), key)
	return wire.AppendU64s(b, answer)
}

// entry is one flight of a snapshot.
type entry struct {
	flightFields
	decoding  bool
	generated int64
}

func appendSnapshotHead(b []byte, epoch uint64, last bool) []byte {
	b = append(b, byte(kindSnapshot))
	b = binary.AppendUvarint(b, epoch)
	if last {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendEntry(b []byte, e *entry) []byte {
	b = appendFlight(b, &e.flightFields)
	if e.decoding {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(max(e.generated, 0)))
}

func readEntry(r *wire.Reader, e *entry) {
	readFlight(r, &e.flightFields)
	e.decoding = r.Byte() == 1
	e.generated = uvarint63(r)
}

// peekHeader reads a message's header without the rest.
func peekHeader(data []byte) (header, error) { return readHeader(wire.NewReader(data, maxString)) }
