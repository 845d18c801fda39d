package kvevents

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file reads the msgpack (https://github.com/msgpack/msgpack/blob/master/spec.md) Decode
// needs (encode.go writes AppendBatch's), by hand rather than with msgpack/v5's Decoder: the
// Decoder reads through an io.ByteScanner, an interface call per byte, and decoded realisticBatch
// about 9 times slower (BenchmarkDecodeMsgpackV5 against BenchmarkDecode, 6M against 52M block
// events/s on one core, allocating per event where Decode allocates nothing). The tests build
// their payloads with msgpack/v5's Encoder, so the two implementations check each other.

// reader reads msgpack values from b, at off. Its methods return an error naming what they
// expected and the byte offset when the value there is of another type or runs past b.
type reader struct {
	b   []byte
	off int
}

// isArray, isMap, isBytes and isInt classify a value by its first byte.
func isArray(c byte) bool { return c&0xf0 == 0x90 || c == 0xdc || c == 0xdd }
func isMap(c byte) bool   { return c&0xf0 == 0x80 || c == 0xde || c == 0xdf }
func isInt(c byte) bool   { return c <= 0x7f || c >= 0xe0 || c >= 0xcc && c <= 0xd3 }
func isBytes(c byte) bool {
	return c&0xe0 == 0xa0 || c >= 0xd9 && c <= 0xdb || c >= 0xc4 && c <= 0xc6
}

// typeName names the type of the value starting with c, for errors.
func typeName(c byte) string {
	switch {
	case isInt(c):
		return "int"
	case isArray(c):
		return "array"
	case isMap(c):
		return "map"
	case c&0xe0 == 0xa0 || c >= 0xd9 && c <= 0xdb:
		return "str"
	case c >= 0xc4 && c <= 0xc6:
		return "bin"
	case c == 0xc0:
		return "nil"
	case c == 0xc2 || c == 0xc3:
		return "bool"
	case c == 0xca || c == 0xcb:
		return "float"
	case c == 0xc1:
		return "invalid byte 0xc1"
	}
	return "ext"
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
func be64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// truncated is the error of a value running past the payload.
func (r *reader) truncated() error {
	return fmt.Errorf("truncated at byte %d", r.off)
}

// left is how many bytes remain.
func (r *reader) left() int { return len(r.b) - r.off }

// take returns the next n bytes, or the truncation error.
func (r *reader) take(n uint64) ([]byte, error) {
	if n > uint64(r.left()) {
		return nil, r.truncated()
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, nil
}

// size reads the big-endian length of width bytes (1, 2 or 4) that follows a type byte.
func (r *reader) size(width int) (uint64, error) {
	s, err := r.take(uint64(width))
	switch {
	case err != nil:
		return 0, err
	case width == 1:
		return uint64(s[0]), nil
	case width == 2:
		return uint64(be16(s)), nil
	}
	return uint64(be32(s)), nil
}

// isNil reads a nil and reports true, or reports false and reads nothing.
func (r *reader) isNil() bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc0 {
		r.off++
		return true
	}
	return false
}

// arrayLen reads an array header. The length is checked against the bytes left, at least one per
// element, so that a caller may allocate for it.
func (r *reader) arrayLen() (int, error) {
	return r.header("array", 0x90, 0xdc, 1)
}

// mapLen reads a map header, whose length is checked as arrayLen's, two bytes per entry.
func (r *reader) mapLen() (int, error) {
	return r.header("map", 0x80, 0xde, 2)
}

// header reads the header of an array (fix 0x90, 16-bit 0xdc, 32-bit 0xdd) or map (0x80, 0xde,
// 0xdf), whose elements take at least per bytes each.
func (r *reader) header(what string, fix, c16 byte, per uint64) (int, error) {
	if r.off >= len(r.b) {
		return 0, r.truncated()
	}
	at := r.off
	c := r.b[at]
	r.off++
	var n uint64
	var err error
	switch c {
	case c16:
		n, err = r.size(2)
	case c16 + 1:
		n, err = r.size(4)
	default:
		if c&0xf0 != fix {
			r.off = at
			return 0, fmt.Errorf("expected %s, got %s at byte %d", what, typeName(c), at)
		}
		n = uint64(c & 0x0f)
	}
	if err != nil {
		return 0, err
	}
	if n*per > uint64(r.left()) {
		return 0, fmt.Errorf("%s of %d at byte %d longer than the %d bytes left", what, n, at, r.left())
	}
	return int(n), nil
}

// str reads a str or bin and returns its bytes, a slice of the payload.
func (r *reader) str() ([]byte, error) {
	if r.off >= len(r.b) {
		return nil, r.truncated()
	}
	at := r.off
	c := r.b[at]
	r.off++
	var n uint64
	var err error
	switch {
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == 0xd9 || c == 0xc4:
		n, err = r.size(1)
	case c == 0xda || c == 0xc5:
		n, err = r.size(2)
	case c == 0xdb || c == 0xc6:
		n, err = r.size(4)
	default:
		r.off = at
		return nil, fmt.Errorf("expected str, got %s at byte %d", typeName(c), at)
	}
	if err != nil {
		return nil, err
	}
	return r.take(n)
}

// key reads a map key: a str reports ok, any other value is read past and reports !ok, as a key
// no one knows.
func (r *reader) key() (key []byte, ok bool, err error) {
	if r.off < len(r.b) && isBytes(r.b[r.off]) {
		key, err = r.str()
		return key, err == nil, err
	}
	return nil, false, r.skip()
}

// bits reads an int, signed or unsigned, as its 64 bits.
func (r *reader) bits() (uint64, error) {
	if r.off >= len(r.b) {
		return 0, r.truncated()
	}
	at := r.off
	c := r.b[at]
	r.off++
	if c <= 0x7f || c >= 0xe0 {
		return uint64(int64(int8(c))), nil
	}
	var width uint64
	switch c {
	case 0xcc, 0xd0:
		width = 1
	case 0xcd, 0xd1:
		width = 2
	case 0xce, 0xd2:
		width = 4
	case 0xcf, 0xd3:
		width = 8
	default:
		r.off = at
		return 0, fmt.Errorf("expected int, got %s at byte %d", typeName(c), at)
	}
	s, err := r.take(width)
	if err != nil {
		return 0, err
	}
	signed := c >= 0xd0
	switch width {
	case 1:
		if signed {
			return uint64(int64(int8(s[0]))), nil
		}
		return uint64(s[0]), nil
	case 2:
		if signed {
			return uint64(int64(int16(be16(s)))), nil
		}
		return uint64(be16(s)), nil
	case 4:
		if signed {
			return uint64(int64(int32(be32(s)))), nil
		}
		return uint64(be32(s)), nil
	}
	return be64(s), nil
}

// int reads an int that fits int64; an unsigned one above math.MaxInt64 is an error.
func (r *reader) int() (int64, error) {
	unsigned := r.off < len(r.b) && r.b[r.off] == 0xcf
	at := r.off
	v, err := r.bits()
	if err == nil && unsigned && v > math.MaxInt64 {
		return 0, fmt.Errorf("%d at byte %d out of range", v, at)
	}
	return int64(v), err
}

// float reads a float64 or float32, or an int as a float.
func (r *reader) float() (float64, error) {
	if r.off >= len(r.b) {
		return 0, r.truncated()
	}
	switch c := r.b[r.off]; {
	case c == 0xcb:
		s, err := r.take(9)
		if err != nil {
			return 0, err
		}
		return math.Float64frombits(be64(s[1:])), nil
	case c == 0xca:
		s, err := r.take(5)
		if err != nil {
			return 0, err
		}
		return float64(math.Float32frombits(be32(s[1:]))), nil
	case isInt(c):
		v, err := r.int()
		return float64(v), err
	default:
		return 0, fmt.Errorf("expected float, got %s at byte %d", typeName(c), r.off)
	}
}

// skip reads past one value of any type. It keeps a count of the values still to read rather
// than recursing, so nesting depth costs nothing, and checks that count against the bytes left
// (each value takes at least one), so it runs in time linear in the payload.
func (r *reader) skip() error {
	for pending := uint64(1); pending > 0; pending-- {
		if r.off >= len(r.b) {
			return r.truncated()
		}
		at := r.off
		c := r.b[at]
		r.off++
		var n, extra uint64 // n bytes of payload, or extra values to read
		var err error
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c&0xf0 == 0x80:
			extra = 2 * uint64(c&0x0f)
		case c&0xf0 == 0x90:
			extra = uint64(c & 0x0f)
		case c&0xe0 == 0xa0:
			n = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			n, err = r.size(1)
		case c == 0xc5 || c == 0xda:
			n, err = r.size(2)
		case c == 0xc6 || c == 0xdb:
			n, err = r.size(4)
		case c == 0xc7: // ext 8, 16, 32: length, type, data
			n, err = r.size(1)
			n++
		case c == 0xc8:
			n, err = r.size(2)
			n++
		case c == 0xc9:
			n, err = r.size(4)
			n++
		case c == 0xcc || c == 0xd0:
			n = 1
		case c == 0xcd || c == 0xd1:
			n = 2
		case c == 0xca || c == 0xce || c == 0xd2:
			n = 4
		case c == 0xcb || c == 0xcf || c == 0xd3:
			n = 8
		case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16: type, data
			n = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			extra, err = r.size(2)
		case c == 0xdd:
			extra, err = r.size(4)
		case c == 0xde:
			extra, err = r.size(2)
			extra *= 2
		case c == 0xdf:
			extra, err = r.size(4)
			extra *= 2
		default:
			return fmt.Errorf("invalid byte 0x%02x at byte %d", c, at)
		}
		if err != nil {
			return err
		}
		if _, err := r.take(n); err != nil {
			return err
		}
		if pending += extra; pending-1 > uint64(r.left()) {
			return fmt.Errorf("%s at byte %d holds more values than the %d bytes left", typeName(c), at, r.left())
		}
	}
	return nil
}

// hash reads one block hash, vLLM's ExternalBlockHash: an int (signed or unsigned) is its 64
// bits; bytes or a str fold into 64 bits, their last 8 bytes big-endian (all of them when
// fewer).
func (r *reader) hash() (uint64, error) {
	if r.off >= len(r.b) {
		return 0, r.truncated()
	}
	c := r.b[r.off]
	if isBytes(c) {
		s, err := r.str()
		if err != nil {
			return 0, err
		}
		var v uint64
		for _, x := range s[max(len(s)-8, 0):] {
			v = v<<8 | uint64(x)
		}
		return v, nil
	}
	if !isInt(c) {
		return 0, fmt.Errorf("expected int, bytes or str, got %s at byte %d", typeName(c), r.off)
	}
	return r.bits()
}

// optIndex reads an optional non-negative int (nil reads as 0), such as block_size, group_idx or
// data_parallel_rank.
func (r *reader) optIndex() (int, error) {
	if r.isNil() {
		return 0, nil
	}
	v, err := r.int()
	if err == nil && (v < 0 || v > math.MaxInt32) {
		err = fmt.Errorf("%d out of range", v)
	}
	return int(v), err
}

// grow returns s resized to n, keeping its array when it holds n.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
