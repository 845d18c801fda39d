package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func newDemo() *cobra.Command {
	var file, cycles string
	cmd := &cobra.Command{
		Use:   "demo --config FILE",
		Short: "Start a pipeline's plugins and run the example cycles through them",
		Long: "demo starts every plugin of the config, then schedules each cycle snapshot in --cycles and\n" +
			"prints its outcome. The live OpenAI proxy in front of an emulated vLLM fleet is not built yet;\n" +
			"until it is, the demo runs the real plugin processes on recorded cycles.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			p, err := buildPipeline(cmd.Context(), file)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "pipeline %s — plugins running:\n\n", file)
			if err := printPlugins(out, p); err != nil {
				return err
			}
			files, err := filepath.Glob(filepath.Join(cycles, "*.json"))
			if err != nil || len(files) == 0 {
				return fmt.Errorf("no cycle snapshots (*.json) in %s", cycles)
			}
			fmt.Fprintf(out, "\nscheduling %d example cycles (foresight schedule --config %s --cycle FILE shows the full trace):\n\n", len(files), file)
			for _, f := range files {
				c, err := readCycle(f)
				if err != nil {
					return err
				}
				t := p.Run(cmd.Context(), c)
				line := fmt.Sprintf("  %-34s %-13s", filepath.Base(f), t.Outcome())
				if ids := t.OrderIDs(); t.Outcome() == "picked" {
					line += " → " + strings.Join(ids, " > ")
				}
				if t.Reason != "" {
					line += "  (" + t.Reason + ")"
				}
				fmt.Fprintln(out, line)
			}
			fmt.Fprintln(out, "\nThe live proxy in front of an emulated vLLM fleet arrives with the router (issue 5).")
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "config", "examples/pipeline.yaml", "pipeline config (YAML)")
	cmd.Flags().StringVar(&cycles, "cycles", "examples/cycles", "directory of cycle snapshots (JSON)")
	return cmd
}
