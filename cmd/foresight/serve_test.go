package main

import (
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
)

func TestServeFlagsOverrideTheConfig(t *testing.T) {
	// Built-in stages only: the test needs no plugin binaries.
	const yaml = `plugins:
  - {name: rr, type: round-robin-picker}
pipeline:
  picker: {pluginRef: rr}
endpoints:
  static: [{address: 127.0.0.1:8000}]
  file: fleet.yaml
  outlierDetection: {consecutiveFailures: 9}
`
	load := func() *config.Config {
		cfg, err := config.Parse("router.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := load()
	o := serveOverrides{endpoints: "http://127.0.0.1:18001, 127.0.0.1:18002", listen: "127.0.0.1:8081", admin: "127.0.0.1:9091"}
	if err := o.apply(cfg); err != nil {
		t.Fatal(err)
	}
	eps := cfg.Endpoints.Static
	if len(eps) != 2 || eps[0].Address != "http://127.0.0.1:18001" || eps[1].ID != "127.0.0.1:18002" || cfg.Endpoints.File != "" {
		t.Errorf("endpoints %+v", cfg.Endpoints)
	}
	// The flag replaces the list, not the section: outlier detection stays as configured.
	if od := cfg.Endpoints.OutlierDetection; od.ConsecutiveFailures != 9 {
		t.Errorf("--endpoints left outlierDetection %+v, want the config's consecutiveFailures 9", od)
	}
	if cfg.Server.Listen != "127.0.0.1:8081" || cfg.Server.AdminListen != "127.0.0.1:9091" {
		t.Errorf("listeners %q, %q", cfg.Server.Listen, cfg.Server.AdminListen)
	}
	for _, tt := range []struct {
		o    serveOverrides
		says string
	}{
		{serveOverrides{endpoints: " , "}, "--endpoints: no endpoint"},
		{serveOverrides{endpoints: "not an address"}, `"not an address" is neither host:port nor an http(s) URL`},
		{serveOverrides{listen: "8080"}, `server.listen: "8080" is not host:port`},
		{serveOverrides{admin: "localhost"}, `server.adminListen: "localhost" is not host:port`},
		{serveOverrides{endpoints: "127.0.0.1:1,127.0.0.1:2", roles: "prefill"}, "--roles gives 1 roles for the 2 endpoints"},
		{serveOverrides{roles: "prefill"}, "give --endpoints too"},
		{serveOverrides{endpoints: "127.0.0.1:1", roles: "prefil"}, `"prefil" names no role`},
		{serveOverrides{split: "sometimes"}, `disaggregation.split: "sometimes" is not a split mode`},
	} {
		if err := tt.o.apply(load()); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%+v: %v, want an error saying %q", tt.o, err, tt.says)
		}
	}
}

func TestServeRolesAndSplitMakeAFleetDisaggregated(t *testing.T) {
	cfg, err := config.Parse("router.yaml", []byte("plugins:\n  - {name: rr, type: round-robin-picker}\npipeline:\n  picker: {pluginRef: rr}\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := serveOverrides{endpoints: "127.0.0.1:1,127.0.0.1:2", roles: "prefill,decode", split: config.SplitAlways}
	if err := o.apply(cfg); err != nil {
		t.Fatal(err)
	}
	d := cfg.Disaggregation
	if d == nil || d.Split != config.SplitAlways || d.PrefillHeader != config.DefaultPrefillHeader {
		t.Fatalf("disaggregation %+v, want split always with the other defaults", d)
	}
	if got := cfg.Endpoints.Static[0].Labels[d.RoleLabel] + "," + cfg.Endpoints.Static[1].Labels[d.RoleLabel]; got != "prefill,decode" {
		t.Errorf("roles %q", got)
	}
}
