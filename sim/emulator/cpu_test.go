package emulator

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foresight-router/foresight/sim/engine"
)

func TestParseCPUCost(t *testing.T) {
	tests := []struct {
		name, spec string
		want       CPUCost
		err        string // a part of the error; "" for none
	}{
		{name: "both", spec: "prefill=2us,decode=40us", want: CPUCost{Prefill: 2 * time.Microsecond, Decode: 40 * time.Microsecond}},
		{name: "any order, spaces", spec: "decode=0.5ms, prefill=1us", want: CPUCost{Prefill: time.Microsecond, Decode: 500 * time.Microsecond}},
		{name: "one part: the other is 0", spec: "decode=40us", want: CPUCost{Decode: 40 * time.Microsecond}},
		{name: "zero", spec: "prefill=0,decode=0", want: CPUCost{}},
		{name: "empty", spec: "", err: "want prefill=DURATION,decode=DURATION"},
		{name: "unknown key", spec: "prompt=2us", err: `part "prompt=2us"`},
		{name: "no value", spec: "decode", err: `part "decode"`},
		{name: "twice", spec: "decode=1us,decode=2us", err: `part "decode=2us"`},
		{name: "no unit", spec: "decode=40", err: `decode="40" is not a duration`},
		{name: "negative", spec: "prefill=-1us", err: `prefill="-1us" is not a duration >= 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCPUCost(tt.spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseCPUCost(%q) = %v, %v; want an error with %q", tt.spec, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseCPUCost(%q) = %v, %v; want %v", tt.spec, got, err, tt.want)
			}
			if back, err := ParseCPUCost(got.String()); err != nil || back != got {
				t.Errorf("String %q reads back as %v, %v", got.String(), back, err)
			}
		})
	}
}

// processCPU is the user+system CPU time this process has used.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Skipf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A burn uses at least the CPU time asked for, on this thread and so in this process.
func TestBurnUsesTheCPUAskedFor(t *testing.T) {
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 30 * time.Millisecond} {
		before := processCPU(t)
		used := burn(d)
		if used < d || processCPU(t)-before < d {
			t.Errorf("burn(%v) used %v, the process %v; want at least %v", d, used, processCPU(t)-before, d)
		}
	}
}

// A server with a CPU cost burns it for the request's uncached prompt tokens and its output
// tokens, beside serving HTTP; without one it does not come near that.
func TestServerBurnsItsCPUCost(t *testing.T) {
	cost := CPUCost{Prefill: 200 * time.Microsecond, Decode: 10 * time.Millisecond}
	prompt := strings.Repeat("word ", 200)
	tokens := len(Tokenize(prompt))
	// A fresh server caches nothing: every prompt token is prefilled; 8 output tokens.
	floor := time.Duration(tokens)*cost.Prefill + 8*cost.Decode
	tests := []struct {
		name string
		opts []Option
		burn bool // the process's CPU reaches the floor
	}{
		{name: "with a cost", opts: []Option{WithCPUCost(cost)}, burn: true},
		{name: "without", burn: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := engine.Preset(testPreset)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewServer(cfg, "", tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			before := processCPU(t)
			resp := post(t, ts.URL+"/v1/completions", `{"prompt":"`+prompt+`","max_tokens":8}`)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			s.Close() // the engine loop stops after its last step's burn
			used := processCPU(t) - before
			if got := used >= floor; got != tt.burn {
				t.Errorf("the process used %v for %d prompt tokens and 8 output tokens; reaching %v: %v, want %v",
					used, tokens, floor, got, tt.burn)
			}
		})
	}
}
