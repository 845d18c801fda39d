package main

import (
	"fmt"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/router"
	"github.com/spf13/cobra"
)

func newServe() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run the router: an OpenAI-compatible proxy in front of the configured endpoints",
		Long: "serve starts the pipeline's plugins, scrapes the endpoints' metrics, and serves the OpenAI API\n" +
			"(/v1/completions, /v1/chat/completions, /v1/models) on server.listen and /metrics,\n" +
			"/debug/decisions and /health on server.adminListen, until interrupted. Ctrl-C lets requests\n" +
			"in flight finish (up to 10 s) and stops every plugin process.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(file)
			if err != nil {
				return err
			}
			r, err := router.Start(cmd.Context(), cfg, logger())
			if err != nil {
				return err
			}
			atExit(r.Close)
			fmt.Fprintf(cmd.OutOrStdout(), "foresight %s: OpenAI API on http://%s, admin on http://%s\n", version, r.Addr(), r.AdminAddr())
			select {} // until SIGINT/SIGTERM, which closes the router
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "router configuration (YAML)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
