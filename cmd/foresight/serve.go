package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/router"
	"github.com/spf13/cobra"
)

// serveOverrides are serve's flags that replace parts of the config.
type serveOverrides struct {
	endpoints, listen, admin, extProc string
	roles, split, kvEvents            string
}

func newServe() *cobra.Command {
	var (
		file, cpuProfile string
		o                serveOverrides
	)
	cmd := &cobra.Command{
		Use:   "serve --config FILE [--endpoints URL[,URL…]] [--listen ADDR] [--admin ADDR] [--ext-proc ADDR]",
		Short: "Run the router: an OpenAI-compatible proxy in front of the configured endpoints",
		Long: "serve starts the pipeline's plugins, scrapes the endpoints' metrics, and serves the OpenAI API\n" +
			"(/v1/completions, /v1/chat/completions, /v1/models) on server.listen and /metrics,\n" +
			"/debug/decisions, /health and the /admin API on server.adminListen, until interrupted.\n" +
			"SIGHUP, a change of the config file and POST /admin/reload rebuild the pipeline and swap it\n" +
			"in without dropping a request (plugins and pipeline only; other sections need a restart).\n" +
			"SIGTERM or Ctrl-C lets requests in flight finish (up to server.shutdownGrace, 25 s; the ones left\n" +
			"then end with a 503 router_shutting_down) and stops every plugin process; the exit code is 0 after\n" +
			"SIGTERM, 130 after Ctrl-C.\n" +
			"--ext-proc (server.extProcListen) also serves the endpoint picker of a Kubernetes Inference\n" +
			"Gateway there: Envoy's ext_proc gRPC protocol, the same pipeline and metrics (docs/kubernetes.md).\n" +
			"--endpoints replaces the config's endpoint list (static, file and kubernetes; outlierDetection\n" +
			"holds), --listen, --admin and\n" +
			"--ext-proc its listeners; they hold across reloads.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(file)
			if err != nil {
				return err
			}
			if err := o.apply(cfg); err != nil {
				return err
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			atExit(stopProfile) // registered first, so it stops after the router has closed
			r, err := router.Start(cmd.Context(), cfg, logger())
			if err != nil {
				return err
			}
			atExit(r.Close)
			fmt.Fprintf(cmd.OutOrStdout(), "foresight %s: OpenAI API on http://%s, admin on http://%s", version, r.Addr(), r.AdminAddr())
			if a := r.ExtProcAddr(); a != "" {
				fmt.Fprintf(cmd.OutOrStdout(), ", ext_proc endpoint picker on %s", a)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			for range hup { // until SIGINT/SIGTERM, which closes the router and exits
				_, _ = r.Reload(cmd.Context(), "SIGHUP") // logged and counted by the router
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "config", "", "router configuration (YAML)")
	f.StringVar(&o.endpoints, "endpoints", "", "comma-separated endpoints (http://host:port or host:port) replacing the config's")
	f.StringVar(&o.listen, "listen", "", "the OpenAI API's address, replacing server.listen")
	f.StringVar(&o.admin, "admin", "", "the admin listener's address, replacing server.adminListen")
	f.StringVar(&o.roles, "roles", "", "with --endpoints: each endpoint's prefill/decode role in order (prefill, decode or both), set as its disaggregation.roleLabel label; adds a disaggregation section when the config has none")
	f.StringVar(&o.kvEvents, "kv-events", "", "with --endpoints: each endpoint's KV-cache event publisher in order (tcp://host:port, or \"\" for none); adds a kvEvents section with the emulator's tokenizer when the config has none")
	f.StringVar(&o.split, "split", "", "disaggregation.split: adaptive, always or never; adds a disaggregation section when the config has none")
	f.StringVar(&o.extProc, "ext-proc", "", "serve the gateway endpoint picker (Envoy ext_proc, gRPC) on this address, replacing server.extProcListen")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the router process's CPU profile to this file when it stops (go tool pprof)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// disaggregate applies --roles and --split.
func (o serveOverrides) disaggregate(cfg *config.Config) error {
	if o.roles == "" && o.split == "" {
		return nil
	}
	d := cfg.Disaggregate()
	if o.split != "" {
		d.Split = o.split
	}
	if o.roles != "" {
		roles, err := o.perEndpoint(cfg, "roles", "roles", o.roles)
		if err != nil {
			return err
		}
		for i, r := range roles {
			cfg.Endpoints.Static[i].Labels = map[string]string{d.RoleLabel: r}
		}
	}
	if err := cfg.ValidateDisaggregation(); err != nil {
		return fmt.Errorf("the flags: %w", err)
	}
	return nil
}

// perEndpoint splits the value of --flag, one item (what) per endpoint of --endpoints, in order.
func (o serveOverrides) perEndpoint(cfg *config.Config, flag, what, value string) ([]string, error) {
	if o.endpoints == "" {
		return nil, fmt.Errorf("--%s gives the %s of --endpoints: give --endpoints too", flag, what)
	}
	items := strings.Split(value, ",")
	if len(items) != len(cfg.Endpoints.Static) {
		return nil, fmt.Errorf("--%s gives %d %s for the %d endpoints of --endpoints", flag, len(items), what, len(cfg.Endpoints.Static))
	}
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items, nil
}

// readKVEvents applies --kv-events: the endpoints' publishers, and a kvEvents section with the
// emulator's tokenizer when the config has none (the emulated fleets the benches run).
func (o serveOverrides) readKVEvents(cfg *config.Config) error {
	if o.kvEvents == "" {
		return nil
	}
	pubs, err := o.perEndpoint(cfg, "kv-events", "publishers", o.kvEvents)
	if err != nil {
		return err
	}
	for i, p := range pubs {
		cfg.Endpoints.Static[i].KVEvents = p
	}
	if cfg.KVEvents == nil {
		cfg.KVEvents = &config.KVEvents{Tokenizer: config.TokenizerEmulator}
	}
	if err := cfg.ValidateKVEvents(); err != nil {
		return fmt.Errorf("the flags: %w", err)
	}
	return nil
}

// apply writes the overrides into cfg and validates the result as the config file would be.
func (o serveOverrides) apply(cfg *config.Config) error {
	if o.endpoints != "" {
		var eps []config.EndpointSpec
		for _, a := range strings.Split(o.endpoints, ",") {
			if a = strings.TrimSpace(a); a != "" {
				eps = append(eps, config.EndpointSpec{ID: a, Address: a})
			}
		}
		if len(eps) == 0 {
			return fmt.Errorf("--endpoints: no endpoint in %q", o.endpoints)
		}
		// The list only: the rest of the section (outlierDetection) holds.
		cfg.Endpoints.Static, cfg.Endpoints.File, cfg.Endpoints.Kubernetes = eps, "", nil
	}
	if err := o.disaggregate(cfg); err != nil {
		return err
	}
	if err := o.readKVEvents(cfg); err != nil {
		return err
	}
	if o.listen != "" {
		cfg.Server.Listen = o.listen
	}
	if o.admin != "" {
		cfg.Server.AdminListen = o.admin
	}
	if o.extProc != "" {
		cfg.Server.ExtProcListen = o.extProc
	}
	if err := cfg.ValidateRouter(); err != nil {
		return fmt.Errorf("the flags: %w", err)
	}
	return nil
}
