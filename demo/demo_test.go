package demo

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
)

func TestDemoWorkloadLastsTheDuration(t *testing.T) {
	classes, err := parseClasses(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scenario string
		rate     float64
	}{
		{"sharegpt", 0}, // 2 req/s per server: 8 req/s
		{"A", 0},
		{"sharegpt", 25},  // a rate the first 64 requests would not cover
		{"production", 0}, // the demo's 16 req/s per server in the high stages (demoRates)
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			o := Options{Scenario: tt.scenario, Servers: 4, Seed: 1, Duration: 30 * time.Second, Rate: tt.rate}
			w, err := generate(o, classes)
			if err != nil {
				t.Fatal(err)
			}
			last := w.Requests[len(w.Requests)-1].Arrival
			switch {
			case tt.scenario == "production":
				// The ladder is squeezed into the duration: 8 stages of 30 s / 8, the last one high.
				if last < o.Duration*7/8 || last > o.Duration {
					t.Errorf("production ladder ends at %v, want within its last stage, (%v, %v]", last, o.Duration*7/8, o.Duration)
				}
			case last < o.Duration:
				t.Errorf("%d requests end at %v, before the %v duration", len(w.Requests), last, o.Duration)
			}
			if tt.scenario == "sharegpt" && len(w.Requests) > int(w.Rate*30*1.2)+64 {
				t.Errorf("%d requests for %v at %.1f req/s: more than needed", len(w.Requests), o.Duration, w.Rate)
			}
			// The demo's 16 req/s per server in the high stages, 16/5 in the low ones: a mean of
			// (16 + 3.2) / 2 × 4 servers = 38.4 req/s.
			if tt.scenario == "production" && math.Abs(w.Rate-38.4) > 1e-9 {
				t.Errorf("production at %v req/s, want 38.4", w.Rate)
			}
			// The default class: every request interactive, with both objectives.
			for _, r := range w.Requests {
				if r.Class != "interactive" || r.SLO.TTFTMs != 1000 || r.SLO.TPOTMs != 25 || r.Priority != 0 {
					t.Fatalf("request %d: class %q, SLO %+v, priority %d; want the default class's", r.ID, r.Class, r.SLO, r.Priority)
				}
			}
		})
	}
}

func TestDemoOptionsValidate(t *testing.T) {
	good := Options{Scenario: "sharegpt", Servers: 4, Duration: time.Minute, Drain: time.Second}
	tests := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"no servers", func(o *Options) { o.Servers = 0 }, "--servers"},
		{"no duration", func(o *Options) { o.Duration = 0 }, "--duration"},
		{"negative drain", func(o *Options) { o.Drain = -time.Second }, "--drain"},
		{"negative rate", func(o *Options) { o.Rate = -1 }, "--rate"},
		{"a trace scenario", func(o *Options) { o.Scenario = "mooncake" }, "--scenario"},
		{"unknown scenario", func(o *Options) { o.Scenario = "nope" }, "--scenario"},
	}
	if err := good.validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	lower := good
	lower.Scenario = "c"
	if err := lower.validate(); err != nil {
		t.Errorf("scenario names are case-insensitive: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.change(&o)
			if err := o.validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate = %v, want an error naming %s", err, tt.want)
			}
		})
	}
	if _, err := parseClasses([]string{"x:abc"}); err == nil || !strings.Contains(err.Error(), "--class") {
		t.Errorf("a bad class: %v, want an error naming --class", err)
	}
}

func TestAddObjectives(t *testing.T) {
	cfg := &config.Config{Objectives: []config.Objective{{Name: "interactive", Priority: 5}}}
	added := addObjectives(cfg)
	if len(added) != 1 || !strings.HasPrefix(added[0], "batch") {
		t.Errorf("added %v, want only batch", added)
	}
	if p, _ := cfg.Priority("interactive"); p != 5 {
		t.Errorf("interactive priority %d, want the config's 5 kept", p)
	}
	if p, ok := cfg.Priority("batch"); !ok || p != -1 {
		t.Errorf("batch priority %d (%v), want -1", p, ok)
	}
	if again := addObjectives(cfg); len(again) != 0 {
		t.Errorf("added %v the second time, want nothing", again)
	}
}
