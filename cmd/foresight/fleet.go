package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/router"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/rs/zerolog"
)

// emulatedFleet is servers emulated engines with the router of a config in front of them.
type emulatedFleet struct {
	fleet  *emulator.Fleet
	router *router.Router
	ids    []string // the endpoints' ids, in fleet.Addrs() order
	once   sync.Once
}

// startEmulatedFleet starts servers emulated engines of preset, replaces cfg's endpoints with them
// (vllm-0, vllm-1, …) and its listeners with free loopback ports, starts the router of cfg and
// waits until it serves the emulator's model. On error nothing is left running; otherwise Close
// stops both.
func startEmulatedFleet(ctx context.Context, cfg *config.Config, servers int, preset string, seed uint64, log zerolog.Logger) (*emulatedFleet, error) {
	fleet, err := emulator.Start(servers, 0, preset, seed)
	if err != nil {
		return nil, err
	}
	f := &emulatedFleet{fleet: fleet}
	cfg.Endpoints = config.Endpoints{}
	for i, a := range fleet.Addrs() {
		id := fmt.Sprintf("vllm-%d", i)
		cfg.Endpoints.Static = append(cfg.Endpoints.Static, config.EndpointSpec{ID: id, Address: a})
		f.ids = append(f.ids, id)
	}
	cfg.Server.Listen, cfg.Server.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	if f.router, err = router.Start(ctx, cfg, log); err != nil {
		fleet.Close()
		return nil, err
	}
	if err := waitModel(ctx, "http://"+f.router.Addr(), emulator.DefaultModel, demoReadyTimeout); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Close stops the router, then the engines. It is safe to call more than once.
func (f *emulatedFleet) Close() {
	f.once.Do(func() {
		f.router.Close()
		f.fleet.Close()
	})
}
