package pipeline

import (
	"context"
	"fmt"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// BuildInProcess is Build with every plugin in the router's own process: the plugins named in
// local run as those implementations, the others as the built-in of their type (a plugin path in
// cfg is not launched). For tests and simulations that exercise the real pipeline without
// plugin binaries. On a failure it stops what it started.
func BuildInProcess(ctx context.Context, cfg *config.Config, local map[string]sdk.Plugin, log zerolog.Logger) (*Pipeline, error) {
	launched := make([]*pluginhost.Plugin, 0, len(cfg.Plugins))
	fail := func(err error) (*Pipeline, error) {
		for _, p := range launched {
			p.Stop()
		}
		return nil, err
	}
	for i := range cfg.Plugins {
		spec := &cfg.Plugins[i]
		params, err := spec.ParametersJSON()
		if err != nil {
			return fail(err)
		}
		p, err := pluginhost.Launch(ctx, pluginhost.Spec{Name: spec.Name, Type: spec.Type,
			Stage: cfg.StageOf(spec.Name), Local: local[spec.Name], Params: params}, log)
		if err != nil {
			return fail(fmt.Errorf("launching %s: %w", spec.Name, err))
		}
		launched = append(launched, p)
	}
	return Assemble(cfg, launched, log), nil
}
