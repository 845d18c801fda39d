package emulator

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// CPUCost is the CPU time an emulated server spends on the work its engine model does, as a real
// emulator or engine front end does (tokenizing a prompt, detokenizing and serializing each
// output token): Prefill for each uncached prompt token a step computes, Decode for each output
// token it generates. The zero CPUCost costs nothing beyond serving HTTP.
type CPUCost struct {
	Prefill, Decode time.Duration
}

// CPUCostForm is the accepted form of ParseCPUCost, for error messages and flag help.
const CPUCostForm = "prefill=DURATION,decode=DURATION (CPU per uncached prompt token and per output token, e.g. prefill=2us,decode=40us)"

// ParseCPUCost reads "prefill=D,decode=D" (either part may be left out: 0; any order) with D a Go
// duration such as 2us or 0.5ms.
func ParseCPUCost(s string) (CPUCost, error) {
	var c CPUCost
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || (key != "prefill" && key != "decode") || seen[key] {
			return CPUCost{}, fmt.Errorf("cpu cost %q: part %q: want %s", s, part, CPUCostForm)
		}
		seen[key] = true
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return CPUCost{}, fmt.Errorf("cpu cost %q: %s=%q is not a duration >= 0; want %s", s, key, val, CPUCostForm)
		}
		if key == "prefill" {
			c.Prefill = d
		} else {
			c.Decode = d
		}
	}
	return c, nil
}

// String returns c in ParseCPUCost's form.
func (c CPUCost) String() string {
	return fmt.Sprintf("prefill=%v,decode=%v", c.Prefill, c.Decode)
}

// Zero reports whether c costs nothing.
func (c CPUCost) Zero() bool { return c.Prefill == 0 && c.Decode == 0 }

// of returns the CPU time of prefill uncached prompt tokens and decode output tokens.
func (c CPUCost) of(prefill, decode int) time.Duration {
	return time.Duration(prefill)*c.Prefill + time.Duration(decode)*c.Decode
}

// Option configures a Server (NewServer) or every server of a Fleet (Start).
type Option func(*Server)

// WithCPUCost makes the server burn c's CPU for each engine step, on its engine goroutine, as soon
// as the step has been computed and its events handed to their requests: the step's work competes
// for the cores with whatever else runs on the host while the step lasts. A burn longer than the
// step delays the engine's next step, as a CPU-starved emulator falls behind.
func WithCPUCost(c CPUCost) Option {
	return func(s *Server) { s.cost = c }
}

// burnChunk is how many rounds of work burn does between two readings of the thread's CPU clock.
const burnChunk = 2000

// burnSink keeps the work's result alive, so that the compiler cannot drop the loop.
var burnSink atomic.Uint64

// burn keeps the calling goroutine's thread busy with real work (an xorshift over a counter) until
// that thread has used d of CPU time (CLOCK_THREAD_CPUTIME_ID): time the thread is descheduled
// does not count, so a burn costs d of CPU however busy the host is. It returns the CPU time used,
// at least d (or 0 where the clock cannot be read).
func burn(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	if !ok {
		return 0
	}
	x := uint64(start) | 1
	for {
		for range burnChunk {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		now, ok := threadCPU()
		if !ok {
			return 0
		}
		if used := now - start; used >= d {
			burnSink.Store(x)
			return used
		}
	}
}

// threadCPU returns the CPU time the calling thread has used.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
