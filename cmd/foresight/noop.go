package main

import (
	"context"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
	"github.com/spf13/cobra"
)

// noopType is the type of the filter plugin the pipeline bench measures the transport floor with.
const noopType = "noop-filter"

// noopFilter keeps every endpoint and does nothing else: a round trip to it costs only the
// transport, the handshake-free gRPC call and the cycle's encoding.
type noopFilter struct{}

func (noopFilter) Type() string           { return noopType }
func (noopFilter) Description() string    { return "keeps every endpoint; measures the transport floor" }
func (noopFilter) Configure([]byte) error { return nil }

func (noopFilter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	return sdk.FilterVerdict{Kept: heuristics.AllIndices(len(c.Endpoints))}, nil
}

func newNoopPlugin() *cobra.Command {
	return &cobra.Command{
		Use:    "noop-plugin",
		Short:  "Serve a no-op filter plugin (used by bench pipeline for the transport floor)",
		Hidden: true,
		Args:   cobra.NoArgs,
		Run:    func(*cobra.Command, []string) { sdk.ServeFilter(noopFilter{}, version) },
	}
}
