package main

import (
	"github.com/foresight-router/foresight/bench"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/spf13/cobra"
)

// noopPluginCommand is the hidden command serving bench.NoopFilter, which bench pipeline
// launches (this binary with it as its argument) for the transport floor.
const noopPluginCommand = "noop-plugin"

func newNoopPlugin() *cobra.Command {
	return &cobra.Command{
		Use:    noopPluginCommand,
		Short:  "Serve a no-op filter plugin (used by bench pipeline for the transport floor)",
		Hidden: true,
		Args:   cobra.NoArgs,
		Run:    func(*cobra.Command, []string) { sdk.ServeFilter(bench.NoopFilter{}, version) },
	}
}
