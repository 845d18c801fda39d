package kvevents

import (
	"encoding/binary"
	"math"
)

// AppendBatch appends b, encoded as a KVEventBatch payload, to dst and returns the extended
// buffer. It writes the array-like form of the vLLM releases whose structs are array_like (and of
// llm-d-inference-sim), which every consumer of vLLM's events reads:
//
//	batch:   [ts, events, data_parallel_rank]
//	Stored:  ["BlockStored", block_hashes, parent_block_hash or nil, token_ids, block_size, nil, medium or nil]
//	Removed: ["BlockRemoved", block_hashes, medium or nil]
//	Cleared: ["AllBlocksCleared"]
//
// where lora_id is nil, hashes are unsigned ints (a hash decoded from a negative int comes back
// as the same 64 bits) and ints take msgpack's shortest form. An event of a Group other than 0
// carries its group_idx too, after nils for the fields between (lora_name and extra_keys of a
// Stored), so that Decode(AppendBatch(b)) gives b back whatever it holds. An event of an unknown
// Kind is written as the tag "unknown", which Decode skips. b.Seq and b.Skipped are not part of
// the payload.
func AppendBatch(dst []byte, b *Batch) []byte {
	dst = appendArrayLen(dst, 3)
	dst = appendFloat(dst, b.TS)
	dst = appendArrayLen(dst, len(b.Events))
	for i := range b.Events {
		dst = appendEvent(dst, &b.Events[i])
	}
	return appendInt(dst, int64(b.DPRank))
}

// appendEvent appends one event in its array-like form.
func appendEvent(dst []byte, ev *Event) []byte {
	switch ev.Kind {
	case Stored:
		n := 7
		if ev.Group != 0 {
			n = 10
		}
		dst = appendArrayLen(dst, n)
		dst = appendStr(dst, "BlockStored")
		dst = appendHashes(dst, ev.Hashes)
		if ev.HasParent {
			dst = appendUint(dst, ev.Parent)
		} else {
			dst = append(dst, 0xc0)
		}
		dst = appendArrayLen(dst, len(ev.Tokens))
		for _, t := range ev.Tokens {
			dst = appendUint(dst, uint64(t))
		}
		dst = appendInt(dst, int64(ev.BlockSize))
		dst = append(dst, 0xc0) // lora_id
		dst = appendMedium(dst, ev.Medium)
		if ev.Group != 0 {
			dst = append(dst, 0xc0, 0xc0) // lora_name, extra_keys
			dst = appendInt(dst, int64(ev.Group))
		}
	case Removed:
		n := 3
		if ev.Group != 0 {
			n = 4
		}
		dst = appendArrayLen(dst, n)
		dst = appendStr(dst, "BlockRemoved")
		dst = appendHashes(dst, ev.Hashes)
		dst = appendMedium(dst, ev.Medium)
		if ev.Group != 0 {
			dst = appendInt(dst, int64(ev.Group))
		}
	default:
		dst = appendArrayLen(dst, 1)
		dst = appendStr(dst, ev.Kind.String())
	}
	return dst
}

// appendHashes appends a list of hashes as unsigned ints.
func appendHashes(dst []byte, h []uint64) []byte {
	dst = appendArrayLen(dst, len(h))
	for _, x := range h {
		dst = appendUint(dst, x)
	}
	return dst
}

// appendMedium appends a medium, nil when empty (vLLM's None).
func appendMedium(dst []byte, m string) []byte {
	if m == "" {
		return append(dst, 0xc0)
	}
	return appendStr(dst, m)
}

// appendArrayLen appends an array header of n elements.
func appendArrayLen(dst []byte, n int) []byte {
	switch {
	case n < 16:
		return append(dst, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xdd), uint32(n))
}

// appendStr appends a str.
func appendStr(dst []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, 0xd9, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, 0xda), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}

// appendUint appends an unsigned int in its shortest form.
func appendUint(dst []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(dst, byte(v))
	case v <= math.MaxUint8:
		return append(dst, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), v)
}

// appendInt appends a signed int in its shortest form (unsigned when not negative).
func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(dst, uint64(v))
	case v >= -32:
		return append(dst, byte(v))
	case v >= math.MinInt8:
		return append(dst, 0xd0, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(v))
}

// appendFloat appends a float64.
func appendFloat(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, 0xcb), math.Float64bits(f))
}
