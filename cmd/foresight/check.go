package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/spf13/cobra"
)

func newCheck() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "check --config FILE",
		Short: "Start every plugin of a config, print what runs, stop them",
		Long: "check loads the config, launches every plugin (handshake, GetInfo type/stage/version checks,\n" +
			"Configure), prints one row per plugin and stops them. Any problem exits non-zero with one\n" +
			"line naming the plugin or field and the cause.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := buildPipeline(cmd.Context(), file)
			if err != nil {
				return err
			}
			return printPlugins(cmd.OutOrStdout(), p)
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "pipeline config (YAML)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func buildPipeline(ctx context.Context, file string) (*pipeline.Pipeline, error) {
	cfg, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := pipeline.Build(ctx, cfg, logger())
	if err != nil {
		return nil, err
	}
	atExit(p.Close)
	return p, nil
}

func printPlugins(out io.Writer, p *pipeline.Pipeline) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tTYPE\tSTAGE\tVERSION\tPROTOCOL\tPID\tSTART_MS")
	for _, pl := range p.Plugins() {
		s := pl.Status()
		proto, pid := "-", "builtin"
		if !s.Builtin {
			proto, pid = fmt.Sprint(s.Protocol), fmt.Sprint(s.PID)
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\t%s\t%.1f\n", s.Name, s.Info.Type, s.Info.Stage, s.Info.Version, proto, pid, s.StartMs)
	}
	return w.Flush()
}
