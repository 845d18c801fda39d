package testbed

import (
	"context"
	"net/http"
	"testing"

	"github.com/foresight-router/foresight/host/config"
)

// TestStartServesThroughTheRouter starts two servers behind a router of built-in stages only
// (no plugin binaries needed) and checks what Start promises.
func TestStartServesThroughTheRouter(t *testing.T) {
	cfg, err := config.Parse("router.yaml", []byte(`plugins:
  - {name: rr, type: round-robin-picker}
pipeline:
  picker: {pluginRef: rr}
endpoints:
  static: [{address: 127.0.0.1:1}]
`))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Start(context.Background(), cfg, Options{Servers: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	addrs := tb.Fleet.Addrs()
	if len(tb.Endpoints) != 2 || tb.Endpoints[0] != (Endpoint{ID: "vllm-0", Addr: addrs[0]}) || tb.Endpoints[1].ID != "vllm-1" {
		t.Errorf("endpoints %+v, fleet %v", tb.Endpoints, addrs)
	}
	if s := cfg.Endpoints.Static; len(s) != 2 || s[1].Address != addrs[1] || cfg.Server.Listen != "127.0.0.1:0" {
		t.Errorf("the config was not rewritten: %+v, listen %q", cfg.Endpoints, cfg.Server.Listen)
	}
	resp, err := http.Get("http://" + tb.Router.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models through the router: %s", resp.Status)
	}
	tb.Close()
	tb.Close() // a second Close does nothing
}

func TestStartFailsCleanly(t *testing.T) {
	cfg, err := config.Parse("router.yaml", []byte("plugins:\n  - {name: rr, type: round-robin-picker}\npipeline:\n  picker: {pluginRef: rr}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), cfg, Options{Servers: 0}); err == nil {
		t.Error("0 servers were started")
	}
	if _, err := Start(context.Background(), cfg, Options{Servers: 1, Preset: "no-such-preset"}); err == nil {
		t.Error("an unknown preset was started")
	}
}
