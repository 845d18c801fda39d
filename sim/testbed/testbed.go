// Package testbed starts the rig the demo, bench proxy and bench faults run on: N real-time
// emulated vLLM servers (sim/emulator) on free loopback ports with a real router (host/router)
// in front of them, configured from an ordinary router config whose endpoints and listeners it
// replaces.
package testbed

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/router"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/rs/zerolog"
)

// DefaultPreset is the engine preset of Options without one.
const DefaultPreset = "llama-3.1-8b-h100-tp2"

// ReadyTimeout bounds Start's wait for the router to list the fleet's model.
const ReadyTimeout = 10 * time.Second

// Options are what Start runs.
type Options struct {
	// Servers is the number of emulated servers, at least 1.
	Servers int
	// Preset is their engine preset (sim/engine); "" is DefaultPreset.
	Preset string
	// Seed seeds the engines' step-time noise: server i's is Seed+i.
	Seed uint64
	// Log is the router's logger; the zero value logs nothing.
	Log zerolog.Logger
}

// Endpoint is one emulated server as the router knows it.
type Endpoint struct {
	// ID is the endpoint's id in the router's config: vllm-0, vllm-1, …
	ID string
	// Addr is the server's host:port.
	Addr string
}

// Testbed is the emulated servers and the router in front of them. Close stops both.
type Testbed struct {
	// Fleet is the emulated servers, Router the router in front of them.
	Fleet  *emulator.Fleet
	Router *router.Router
	// Endpoints are the servers in Fleet.Addrs() order, with the ids the router knows them by.
	Endpoints []Endpoint
	once      sync.Once
}

// Start starts o.Servers emulated engines of o.Preset, replaces cfg's endpoints with them
// (vllm-0, vllm-1, …) and its listeners with free loopback ports, starts the router of cfg and
// waits (at most ReadyTimeout) until it serves the emulator's model. cfg is modified. On error
// nothing is left running; otherwise Close stops both.
func Start(ctx context.Context, cfg *config.Config, o Options) (*Testbed, error) {
	fleet, err := emulator.Start(o.Servers, 0, cmp.Or(o.Preset, DefaultPreset), o.Seed)
	if err != nil {
		return nil, err
	}
	t := &Testbed{Fleet: fleet}
	cfg.Endpoints = config.Endpoints{}
	for i, a := range fleet.Addrs() {
		e := Endpoint{ID: fmt.Sprintf("vllm-%d", i), Addr: a}
		cfg.Endpoints.Static = append(cfg.Endpoints.Static, config.EndpointSpec{ID: e.ID, Address: a})
		t.Endpoints = append(t.Endpoints, e)
	}
	cfg.Server.Listen, cfg.Server.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	if t.Router, err = router.Start(ctx, cfg, o.Log); err != nil {
		fleet.Close()
		return nil, err
	}
	if err := waitModel(ctx, "http://"+t.Router.Addr(), emulator.DefaultModel, ReadyTimeout); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Close stops the router, then the engines. It is safe to call more than once and from several
// goroutines.
func (t *Testbed) Close() {
	t.once.Do(func() {
		t.Router.Close()
		t.Fleet.Close()
	})
}

// waitModel waits until the router lists model in /v1/models: it has scraped the fleet.
func waitModel(ctx context.Context, base, model string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	for {
		if ok, _ := hasModel(ctx, client, base, model); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the router at %s to list model %q: not within %v", base, model, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hasModel reports whether base's /v1/models lists model.
func hasModel(ctx context.Context, client *http.Client, base, model string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.Data, func(m struct {
		ID string `json:"id"`
	}) bool {
		return m.ID == model
	}), nil
}
