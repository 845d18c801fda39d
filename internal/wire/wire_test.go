package wire

import (
	"encoding/binary"
	"slices"
	"testing"
)

func TestRoundTripAndShortRecords(t *testing.T) {
	b := AppendString(nil, "replica")
	b = AppendU64s(b, []uint64{1, 1 << 63})
	b = AppendF64(b, 2.5)
	b = binary.AppendVarint(b, -7)
	b = binary.AppendUvarint(b, 300)
	b = binary.LittleEndian.AppendUint16(b, 9)
	b = binary.LittleEndian.AppendUint32(b, 10)
	b = append(b, 4)
	r := NewReader(b, 16)
	if s, u, f, v, uv, x, y, c := r.String(), r.U64s(4), r.F64(), r.Varint(), r.Uvarint(), r.U16(), r.U32(), r.Byte(); s != "replica" ||
		!slices.Equal(u, []uint64{1, 1 << 63}) || f != 2.5 || v != -7 || uv != 300 || x != 9 || y != 10 || c != 4 || r.Err() != nil || r.Len() != 0 {
		t.Errorf("read %q %v %v %d %d %d %d %d, err %v, %d left", s, u, f, v, uv, x, y, c, r.Err(), r.Len())
	}
	// Every truncation is an error, and the first error sticks: later reads give zeros.
	for n := range len(b) {
		r := NewReader(b[:n], 16)
		_, _, _, _, _, _, _, _ = r.String(), r.U64s(4), r.F64(), r.Varint(), r.Uvarint(), r.U16(), r.U32(), r.Byte()
		if r.Err() == nil {
			t.Errorf("a record cut at %d of %d bytes read without an error", n, len(b))
		}
		if r.U64() != 0 || r.String() != "" {
			t.Errorf("reads after an error are not zero")
		}
	}
	// Bounds: a string longer than MaxString, a list longer than asked.
	if r := NewReader(AppendString(nil, "a string of 23 bytes..."), 16); r.String() != "" || r.Err() == nil {
		t.Errorf("an overlong string was read")
	}
	if r := NewReader(AppendU64s(nil, []uint64{1, 2, 3}), 0); r.U64s(2) != nil || r.Err() == nil {
		t.Errorf("an overlong list was read")
	}
}
