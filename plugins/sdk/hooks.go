package sdk

import "github.com/foresight-router/foresight/plugins/sdk/internal/wire"

// init lends package transport, the host's side of the protocol, what it needs of this package's
// unexported parts: the cycle's slot for its cached encoding, the plugin side's decoding of a cycle
// (a stage's view of a projected cycle is exactly what this side decodes) and the guard that gives
// in-process stages the failures they would have over the wire.
func init() {
	wire.Lent = wire.Hooks[Cycle]{
		Slot:        func(c *Cycle) *any { return &c.host },
		DecodeCycle: cycleFromProto,
		Protect:     protect,
	}
}
