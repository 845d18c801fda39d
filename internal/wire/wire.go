// Package wire writes and reads the compact binary records Foresight's own formats are made of
// (the producer's samples files, the state plane's messages): little-endian fixed-width numbers,
// varints, and strings and byte runs prefixed by their length as a uvarint.
//
// Append functions extend a byte slice. A Reader consumes one; its first error sticks and every
// later read returns zero values, so a decoder reads a whole record and checks Err once.
package wire

import (
	"encoding/binary"
	"errors"
	"math"
)

// AppendString appends s, prefixed by its length.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendU64s appends vs, prefixed by their count, 8 bytes each.
func AppendU64s(b []byte, vs []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// AppendF64 appends v's IEEE 754 bits, 8 bytes.
func AppendF64(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

// ErrShort is the error of a read past the end of the record.
var ErrShort = errors.New("the record ends early")

// Reader consumes a record.
type Reader struct {
	b   []byte
	err error
	// MaxString bounds a string's length (0: no bound); a longer one is an error.
	MaxString int
}

// NewReader returns a reader of b whose strings are at most maxString bytes (0: any).
func NewReader(b []byte, maxString int) *Reader { return &Reader{b: b, MaxString: maxString} }

// Err is the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// Len is how many bytes are left.
func (r *Reader) Len() int { return len(r.b) }

// Fail sets err as the reader's error, unless it has one already: a decoder's own checks (a
// count out of range) stop the reading as a malformed number would.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Take returns the next n bytes (aliasing the record).
func (r *Reader) Take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = ErrShort
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if v := r.Take(1); v != nil {
		return v[0]
	}
	return 0
}

// U16 reads a little-endian uint16.
func (r *Reader) U16() uint16 {
	if v := r.Take(2); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

// U32 reads a little-endian uint32.
func (r *Reader) U32() uint32 {
	if v := r.Take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

// U64 reads a little-endian uint64.
func (r *Reader) U64() uint64 {
	if v := r.Take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// F64 reads a float64 written by AppendF64.
func (r *Reader) F64() float64 { return math.Float64frombits(r.U64()) }

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("a malformed number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("a malformed number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// String reads a string written by AppendString.
func (r *Reader) String() string {
	n := r.Uvarint()
	if r.err == nil && (r.MaxString > 0 && n > uint64(r.MaxString) || n > uint64(len(r.b))) {
		r.err = errors.New("a malformed or overlong string")
	}
	return string(r.Take(int(n)))
}

// U64s reads what AppendU64s wrote, at most max values (fewer bytes left than they need is an
// error too).
func (r *Reader) U64s(max int) []uint64 {
	n := r.Uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(max) || n*8 > uint64(len(r.b)) {
		r.err = errors.New("a malformed or overlong list")
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(r.b[8*i:])
	}
	r.b = r.b[8*n:]
	return out
}
