package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bench soak refuses bad numbers, and a config it cannot fault, before starting anything.
func TestBenchSoakFlags(t *testing.T) {
	// Built-in stages only: no plugin process to kill, no latency scorer to swap.
	builtins := filepath.Join(t.TempDir(), "builtins.yaml")
	if err := os.WriteFile(builtins, []byte("plugins:\n  - {name: rr, type: round-robin-picker}\npipeline:\n  picker: {pluginRef: rr}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--rate", "0"}, "--rate must be a positive number of requests/s, got 0"},
		{[]string{"--duration", "0s"}, "--duration must be positive, got 0s"},
		{[]string{"--rate", "10000", "--duration", "1h"}, "is 36000000 requests, more than 2000000"},
		{[]string{"--duration", "10s", "--warmup", "10s"}, "--warmup must be in [0, --duration), got 10s"},
		{[]string{"--sample-every", "10ms"}, "--sample-every must be at least 100ms, got 10ms"},
		{[]string{"--kill-every", "-1s"}, "--kill-every, --swap-every and --stop-every must not be negative"},
		{[]string{"--stop-every", "-1s"}, "--kill-every, --swap-every and --stop-every must not be negative"},
		{[]string{"--truncate-every", "-1"}, "--truncate-every must not be negative (0: none), got -1"},
		{[]string{"--drain", "300"}, "--drain must be in [0, 256], got 300"},
		{[]string{"--max-tokens", "0"}, "--max-tokens must be in [1, 4096], got 0"},
		{[]string{"--servers", "0"}, "--servers must be at least 1, got 0"},
		{[]string{"--config", builtins}, builtins + `: --swap-every needs slot scorers.0: no slot "scorers.0"`},
		{[]string{"--config", builtins, "--swap-every", "0"}, builtins + ": no plugin is launched from a binary, so there is no process to kill (use --kill-every 0)"},
		{[]string{"--config", builtins, "--swap-every", "0", "--kill-every", "0"}, builtins + ": no plugin is launched from a binary, so there is no process to kill (use --stop-every 0)"},
	} {
		cmd := newBenchSoak()
		cmd.SetArgs(tt.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%v: %v, want an error saying %q", tt.args, err, tt.says)
		}
	}
}
