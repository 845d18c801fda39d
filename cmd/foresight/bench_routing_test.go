package main

import (
	"io"
	"strings"
	"testing"
)

// bench routing refuses --load with --rate, loads outside (0, 2] and --saturation without
// --load, before running anything.
func TestBenchRoutingLadderFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--load", "0.5", "--rate", "2"}, "--load and --rate exclude each other"},
		{[]string{"--load", "0.5,2.5"}, "every load must be in (0, 2]"},
		{[]string{"--load", "0"}, "every load must be in (0, 2]"},
		{[]string{"--load", "half"}, `invalid argument "half" for "--load"`},
		{[]string{"--saturation", "10"}, "--saturation sets the rate the loads of --load are fractions of: give --load too"},
		{[]string{"--load", "0.5", "--saturation", "-3"}, "--saturation must be"},
	} {
		cmd := newBenchRouting()
		cmd.SetArgs(tt.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%v: %v, want an error saying %q", tt.args, err, tt.says)
		}
	}
}
