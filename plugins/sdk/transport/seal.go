package transport

import (
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
)

// hooks are the pieces of package sdk this package needs (see wire.Hooks); sdk, which this package
// imports, has set them by the time this package initialises.
var hooks = wire.Lent.(wire.Hooks[sdk.Cycle])

// wireCache is a cycle's encoded form, valid only for the cycle at address of.
type wireCache struct {
	of *sdk.Cycle
	encoded
}

// encoded is a cycle's encoded form: the whole cycle, and its request without the prefix block
// hashes for the stages that do not read them (the same message when there are none).
type encoded struct {
	msg  *pb.Cycle
	bare *pb.Request
}

// encode encodes c.
func encode(c *sdk.Cycle) encoded {
	w := encoded{msg: CycleToProto(c)}
	w.bare = w.msg.GetRequest()
	if len(c.Request.PrefixBlockHashes) > 0 {
		r := c.Request
		r.PrefixBlockHashes = nil
		w.bare = requestToProto(&r)
	}
	return w
}

// Seal encodes the cycle once so that every stage call sending it reuses the encoding. Call it when
// the cycle will no longer change (and again after changing it); a copy of a sealed cycle is not
// sealed. Seal must not run concurrently with calls that send the cycle.
func Seal(c *sdk.Cycle) { *hooks.Slot(c) = &wireCache{of: c, encoded: encode(c)} }

// WithRound returns a copy of c in round r, sealed when c is: the encoding does not hold the round,
// which every call sets beside it. Change a cycle's round this way rather than in place: a call
// its caller gave up on may still be reading c (a stage's deadline passed while the call was
// queued), and c must not change under it.
func WithRound(c *sdk.Cycle, r sdk.Round) *sdk.Cycle {
	n := *c
	n.Round = r
	if w, ok := (*hooks.Slot(c)).(*wireCache); ok && w.of == c {
		*hooks.Slot(&n) = &wireCache{of: &n, encoded: w.encoded}
	}
	return &n
}

// encodingOf returns the cycle's sealed encoding, or encodes it now.
func encodingOf(c *sdk.Cycle) encoded {
	if w, ok := (*hooks.Slot(c)).(*wireCache); ok && w.of == c {
		return w.encoded
	}
	return encode(c)
}
