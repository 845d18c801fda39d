package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/host/router"
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
			plugins, err := startPlugins(cmd.Context(), file)
			if err != nil {
				return err
			}
			return printPlugins(cmd.OutOrStdout(), plugins)
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

// startPlugins starts every plugin of the config at file, those of every scheduling profile
// (router.Pipelines, which shares a plugin between the profiles that use it), and returns them
// in the order of its plugins list.
func startPlugins(ctx context.Context, file string) ([]*pluginhost.Plugin, error) {
	cfg, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	l, err := router.StartPipelines(ctx, cfg, logger())
	if err != nil {
		return nil, err
	}
	atExit(l.Close)
	plugins := l.Plugins()
	order := func(p *pluginhost.Plugin) int {
		return slices.IndexFunc(cfg.Plugins, func(s config.PluginSpec) bool { return s.Name == p.Name() })
	}
	slices.SortStableFunc(plugins, func(a, b *pluginhost.Plugin) int { return order(a) - order(b) })
	return plugins, nil
}

func printPlugins(out io.Writer, plugins []*pluginhost.Plugin) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tTYPE\tSTAGE\tVERSION\tPROTOCOL\tPID\tSTART_MS")
	for _, pl := range plugins {
		s := pl.Status()
		proto, pid := "-", "builtin"
		if !s.Builtin {
			proto, pid = fmt.Sprint(s.Protocol), fmt.Sprint(s.PID)
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\t%s\t%.1f\n", s.Name, s.Info.Type, s.Info.Stage, s.Info.Version, proto, pid, s.StartMs)
	}
	return w.Flush()
}
