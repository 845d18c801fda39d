package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/workload"
)

// emulateHelper serves what `foresight emulate` serves, from the flags startFleet gives it, and
// prints the servers' addresses as it does (Fleet.WriteAddrs), until it is stopped.
func emulateHelper(args []string) {
	fs := flag.NewFlagSet("emulate", flag.ExitOnError)
	servers := fs.Int("servers", 1, "")
	fs.Int("base-port", 0, "")
	preset := fs.String("preset", "", "")
	seed := fs.Uint64("seed", 1, "")
	spec := fs.String("engine-cpu", "", "")
	if len(args) == 0 || args[0] != "emulate" || fs.Parse(args[1:]) != nil {
		fmt.Fprintln(os.Stderr, "want emulate and its flags, got", args)
		os.Exit(2)
	}
	cost, err := emulator.ParseCPUCost(*spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f, err := emulator.Start(*servers, 0, *preset, *seed, emulator.WithCPUCost(cost))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f.WriteAddrs(os.Stdout); err != nil {
		os.Exit(1)
	}
	select {} // SIGTERM ends the process
}

func TestParseEngineCPU(t *testing.T) {
	tests := []struct {
		name, spec string
		want       EngineCPU
		err        string // a part of the error; "" for none
	}{
		{name: "off", spec: "", want: EngineCPU{}},
		{name: "per token", spec: "prefill=2us,decode=40us", want: EngineCPU{On: true,
			Cost: emulator.CPUCost{Prefill: 2 * time.Microsecond, Decode: 40 * time.Microsecond}}},
		{name: "zero: servers in their own process, no burn", spec: "prefill=0,decode=0", want: EngineCPU{On: true}},
		{name: "auto", spec: "auto:0.6", want: EngineCPU{On: true, Share: 0.6}},
		{name: "auto, whole host", spec: "auto:1", want: EngineCPU{On: true, Share: 1}},
		{name: "auto above 1", spec: "auto:1.5", err: "the share must be a number in (0, 1]"},
		{name: "auto 0", spec: "auto:0", err: "the share must be a number in (0, 1]"},
		{name: "auto, a percentage", spec: "auto:60%", err: "want prefill=DURATION,decode=DURATION"},
		{name: "a bare duration", spec: "40us", err: `--engine-cpu: cpu cost "40us": part "40us"`},
		{name: "no unit", spec: "decode=40", err: `decode="40" is not a duration >= 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEngineCPU(tt.spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "auto:SHARE") {
					t.Fatalf("ParseEngineCPU(%q) = %+v, %v; want an error with %q naming both forms", tt.spec, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseEngineCPU(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
			}
		})
	}
}

func TestAutoCost(t *testing.T) {
	w := &workload.Workload{Requests: []workload.Request{
		{Arrival: 0, OutputTokens: 100}, {Arrival: 5 * time.Second, OutputTokens: 300}, {Arrival: 10 * time.Second, OutputTokens: 600},
	}}
	// 0.6 of 2 CPUs over a 10 s span is 12 s of CPU, over 1000 output tokens: 12 ms each.
	if got, want := autoCost(w, 0.6, 2), (emulator.CPUCost{Decode: 12 * time.Millisecond}); got != want {
		t.Errorf("autoCost = %v, want %v", got, want)
	}
	// One arrival: no span to spread the CPU over, no cost.
	if got := autoCost(&workload.Workload{Requests: w.Requests[:1]}, 0.6, 2); !got.Zero() {
		t.Errorf("autoCost of one arrival = %v, want none", got)
	}
}

// With --engine-cpu the servers run in a process of their own whose CPU time is the engines':
// burning decode=5ms per output token it is at least the workload's output tokens × 5 ms; with
// prefill=0,decode=0 (the same process, no burn) it stays far below that.
func TestRunLiveEngineCPU(t *testing.T) {
	t.Setenv(helperEnv, "emulate")
	trace := writeTrace(t, 24, 20*time.Millisecond)
	// writeTrace's answers are 4 + i%8 tokens: three times 4…11, 180 tokens; 180 × 5 ms = 0.9 s,
	// with a tenth off for the clock ticks of /proc/<pid>/stat.
	const floor = 0.9 * 0.9
	tests := []struct {
		spec  string
		above bool // the engines' CPU reaches floor
	}{
		{spec: "decode=5ms", above: true},
		{spec: "prefill=0,decode=0", above: false},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			res, err := RunLive(context.Background(), LiveOptions{Binary: os.Args[0], Baselines: BaselineLeastOutstanding,
				Scenario: "azure-conv", Trace: trace, Servers: 2, Seed: 1, Speedup: 2, EngineCPU: tt.spec})
			if err != nil {
				t.Fatal(err)
			}
			run := res.Runs[0]
			if run.OK != 24 || run.EnginesCPUSeconds == nil || run.HostBusy == nil {
				t.Fatalf("%d ok, engines' CPU %v, host busy %v; want 24 ok and both measured", run.OK, run.EnginesCPUSeconds, run.HostBusy)
			}
			if got := *run.EnginesCPUSeconds >= floor; got != tt.above {
				t.Errorf("engines' CPU %.3f s; reaching %.2f s: %v, want %v", *run.EnginesCPUSeconds, floor, got, tt.above)
			}
			if b := *run.HostBusy; b < 0 || b > 1 {
				t.Errorf("host busy %v, want a share in [0, 1]", b)
			}
			var text strings.Builder
			if err := res.WriteText(&text); err != nil || !strings.Contains(text.String(), "engine CPU "+res.EngineCPU) ||
				!strings.Contains(text.String(), "engines CPU s") {
				t.Errorf("text: %v\n%s", err, text.String())
			}
		})
	}
}
