package bench

import (
	"context"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// NoopType is the plugin type of NoopFilter.
const NoopType = "noop-filter"

// NoopFilter is the filter plugin bench pipeline measures the transport floor with: it keeps
// every endpoint and does nothing else, so that a round trip to it costs only the transport,
// the handshake-free gRPC call and the cycle's encoding. Serve it with sdk.ServeFilter.
type NoopFilter struct{}

// Type returns NoopType.
func (NoopFilter) Type() string { return NoopType }

// Description says what the filter is for.
func (NoopFilter) Description() string { return "keeps every endpoint; measures the transport floor" }

// Configure accepts any parameters and ignores them.
func (NoopFilter) Configure([]byte) error { return nil }

// Filter keeps every endpoint of the cycle.
func (NoopFilter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	return sdk.FilterVerdict{Kept: heuristics.AllIndices(len(c.Endpoints))}, nil
}
