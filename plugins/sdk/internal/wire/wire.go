// Package wire is what the two halves of the plugin protocol share below the sdk types: package sdk
// (the plugin side) and package sdk/transport (the host side) both read the columnar wire form and
// set the same flow-control windows, and sdk lends transport, through Hooks, the few pieces that
// need sdk's unexported fields. Nothing outside plugins/sdk can import it.
package wire

import (
	"fmt"

	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"google.golang.org/grpc/mem"
)

// Flow-control windows of the host–plugin connections. gRPC starts with 64 KiB windows and
// probes the bandwidth-delay product with PING frames, and returns WINDOW_UPDATE frames as it
// reads: extra writes, reads and wake-ups on every few stage calls. Between two processes on one
// machine there is nothing to probe, so both sides set fixed windows large enough for the largest
// batch (which turns the probing off) and updates become rare.
const (
	// StreamWindow is the window of one stream.
	StreamWindow = 4 << 20
	// ConnWindow is the window of a whole connection.
	ConnWindow = 16 << 20
)

// BufferPool is the buffer pool of the host–plugin connections, on both sides. gRPC's default pool
// has tiers of 256 B, 4, 16 and 32 KiB and 1 MiB, and zeroes a buffer's whole capacity when it
// reuses it: every message between 32 KiB and 1 MiB (a batch of a few cycles at 100 endpoints)
// cleared a whole MiB, 35–49 µs each, a quarter of the host's CPU in a bench of rounds. This pool
// has a tier at every power of two from 256 B to 1 MiB, so a reused buffer is at most twice the
// message it carries, and what is cleared with it. Larger messages are allocated, as by default.
var BufferPool = mustPool(mem.NewBinaryTieredBufferPool(8, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20))

func mustPool(p mem.BufferPool, err error) mem.BufferPool {
	if err != nil {
		panic(fmt.Sprintf("the plugin connections' buffer pool: %v", err))
	}
	return p
}

// Columns reads the columns of one columnar message, each either empty (all zero) or exactly N
// long, and remembers the first column of another length.
type Columns struct {
	// N is the number of endpoints the columns describe.
	N int
	// Err describes the first column whose length is neither 0 nor N; callers return it as an
	// invalid-argument status.
	Err error
}

// Column returns the reader of col, named name in Err: entry i of col, or zero when col is empty.
func Column[T any](cc *Columns, name string, col []T) func(int) T {
	if len(col) == 0 {
		return func(int) T { var zero T; return zero }
	}
	if len(col) != cc.N && cc.Err == nil {
		cc.Err = fmt.Errorf("invalid cycle: column %q has %d entries for %d endpoints", name, len(col), cc.N)
	}
	return func(i int) T { return col[i] }
}

// Hooks are the pieces of package sdk that package transport needs and that sdk cannot export
// without putting them in front of plugin authors. C is sdk.Cycle.
type Hooks[C any] struct {
	// Slot returns the cycle's slot for the host's cached encoding of it (see transport.Seal).
	Slot func(c *C) *any
	// DecodeCycle is the plugin side's decoding of a wire cycle (see transport.ProjectCycle).
	DecodeCycle func(p *pb.Cycle) (*C, error)
	// Protect runs call, turning a panic or a plain error into the *sdk.StatusError a stage's
	// failure travels as, the in-process error kept as its cause (see transport.Local).
	Protect func(call func() error) error
}

// Lent holds the Hooks[sdk.Cycle] that package sdk sets in its init; transport reads it once.
var Lent any

// CheckIndices rejects an endpoint index outside [0, n): the host's check of every stage answer
// that names endpoints, and the plugin side's of a filter step within a fused call.
func CheckIndices(idx []int, n int) error {
	for _, k := range idx {
		if k < 0 || k >= n {
			return fmt.Errorf("endpoint index %d out of range: the cycle has %d endpoints", k, n)
		}
	}
	return nil
}

// OptionalColumn returns the column of n entries whose entry i is at(i), or nil when every entry
// is zero. The predictions' optional columns (ttft_after_ms, tpot_after_ms, ttft_spread,
// tpot_spread) go through it: a producer that does not fill one, or a cycle outside a round,
// sends nothing for it, so such cycles stay as lean as before the columns existed, and the
// receiver reads the empty column as zeros.
func OptionalColumn(n int, at func(i int) float64) []float64 {
	for i := range n {
		if at(i) != 0 {
			// Every entry before i is zero, which make already holds.
			col := make([]float64, n)
			for j := i; j < n; j++ {
				col[j] = at(j)
			}
			return col
		}
	}
	return nil
}
