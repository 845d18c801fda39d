package wire

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Codec is the protobuf codec of the host–plugin connections, on both sides: gRPC's own, but for
// the buffers it marshals into and gathers a message's frames into, which come from BufferPool
// rather than gRPC's default pool (whose buffers for anything over 32 KiB are a whole MiB,
// cleared on every reuse). Messages below gRPC's pooling threshold are marshalled into a plain
// slice, as gRPC's codec does.
type Codec struct{}

// Name is the codec's content subtype: "proto", the one gRPC and every plugin language speaks.
func (Codec) Name() string { return "proto" }

// Marshal encodes v, a protobuf message.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("marshalling %T: not a protobuf message", v)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // the size was just computed, on this m
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := BufferPool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		BufferPool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, BufferPool)}, nil
}

// Unmarshal decodes data into v, a protobuf message.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("unmarshalling into %T: not a protobuf message", v)
	}
	buf := data.MaterializeToBuffer(BufferPool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
