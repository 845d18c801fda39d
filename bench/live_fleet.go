package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/workload"
)

// EngineCPUForm is the accepted form of --engine-cpu, for error messages and flag help.
const EngineCPUForm = "prefill=DURATION,decode=DURATION (CPU per uncached prompt token and per output token, e.g. " +
	"prefill=2us,decode=40us) or auto:SHARE (the output tokens cost what keeps SHARE of the host's CPUs busy, e.g. auto:0.6)"

// EngineCPU is what --engine-cpu asks of the emulated servers: a CPU cost per token (Cost), or
// auto:SHARE (Share > 0), a decode cost worked out from the workload so that the servers' burn
// alone keeps Share of the CPUs busy over the arrivals' span. On reports whether it was given.
type EngineCPU struct {
	On    bool
	Cost  emulator.CPUCost
	Share float64
}

// ParseEngineCPU reads --engine-cpu: "" (off), emulator.ParseCPUCost's form, or auto:SHARE with
// SHARE in (0, 1].
func ParseEngineCPU(s string) (EngineCPU, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return EngineCPU{}, nil
	}
	if v, ok := strings.CutPrefix(s, "auto:"); ok {
		share, err := strconv.ParseFloat(v, 64)
		if err != nil || !(share > 0 && share <= 1) {
			return EngineCPU{}, fmt.Errorf("--engine-cpu %q: the share must be a number in (0, 1]; want %s", s, EngineCPUForm)
		}
		return EngineCPU{On: true, Share: share}, nil
	}
	c, err := emulator.ParseCPUCost(s)
	if err != nil {
		return EngineCPU{}, fmt.Errorf("--engine-cpu: %w, or auto:SHARE (e.g. auto:0.6)", err)
	}
	return EngineCPU{On: true, Cost: c}, nil
}

// autoCost is auto:share's cost for w on cpus CPUs: no prefill cost (how many prompt tokens the
// prefix cache spares depends on the routing), and each of the workload's output tokens (all
// known in advance) costing share × cpus × the arrivals' span / the output tokens, so that the
// servers burn share of the CPUs on average over the span. Tokens generated after the last
// arrival make the run last a little longer at a lower share.
func autoCost(w *workload.Workload, share float64, cpus int) emulator.CPUCost {
	out := 0
	for i := range w.Requests {
		out += w.Requests[i].OutputTokens
	}
	span := w.Requests[len(w.Requests)-1].Arrival
	if out == 0 || span <= 0 {
		return emulator.CPUCost{}
	}
	return emulator.CPUCost{Decode: time.Duration(math.Round(share * float64(cpus) * float64(span) / float64(out)))}
}

// resolve returns the cost the servers burn for w: the given one, or auto's.
func (e EngineCPU) resolve(w *workload.Workload) emulator.CPUCost {
	if e.Share > 0 {
		return autoCost(w, e.Share, runtime.NumCPU())
	}
	return e.Cost
}

// liveFleet is a run's emulated servers: in the bench's process (no --engine-cpu), or in a
// `foresight emulate` process of their own, whose CPU time is then the engines'.
type liveFleet interface {
	Addrs() []string
	// KVEventsAddrs are the servers' KV-cache event publishers, in order ("" without).
	KVEventsAddrs() []string
	Close()
}

// fleetProc is a `foresight emulate` process serving a run's servers.
type fleetProc struct {
	proc  *RouterProc // the process plumbing is the router's: own group, output tail, stop
	addrs []string
	kv    []string // KVEventsAddrs
	grace time.Duration
}

// KVEventsAddrs returns the servers' KV-cache event publishers, in order ("" without).
func (f *fleetProc) KVEventsAddrs() []string { return append([]string(nil), f.kv...) }

// Addrs returns the servers' host:port addresses, in order.
func (f *fleetProc) Addrs() []string { return append([]string(nil), f.addrs...) }

// Close stops the process.
func (f *fleetProc) Close() { f.proc.Stop(f.grace) }

// startFleet starts the servers of a run: in this process without --engine-cpu, else as
// `bin emulate --servers N --base-port 0 --preset P --seed S --engine-cpu COST`, waiting (at most
// timeout) until it has printed every server's address and each answers /health. It returns
// the process's pid then (0 in process).
func startFleet(ctx context.Context, o LiveOptions, cost emulator.CPUCost, engineCPU bool) (liveFleet, int, error) {
	if !engineCPU {
		var opts []emulator.Option
		if o.KVEvents {
			opts = append(opts, emulator.WithKVEvents(0))
		}
		f, err := emulator.Start(o.Servers, 0, o.Preset, o.Seed, opts...)
		return f, 0, err
	}
	args := []string{"emulate", "--servers", strconv.Itoa(o.Servers), "--base-port", "0", "--preset", o.Preset,
		"--seed", strconv.FormatUint(o.Seed, 10), "--engine-cpu", cost.String()}
	if o.KVEvents {
		args = append(args, "--kv-events-port", "0")
	}
	p, err := spawn(o.Binary, args...)
	if err != nil {
		return nil, 0, err
	}
	f := &fleetProc{proc: p, grace: o.StopGrace}
	err = pollReady(ctx, o.ReadyTimeout, p.exited, func(ctx context.Context, client *http.Client) bool {
		f.addrs = emulator.ReadAddrs(p.out.String())
		f.kv, _ = emulator.ReadKVEventsAddrs(p.out.String())
		if len(f.addrs) < o.Servers {
			return false
		}
		for _, a := range f.addrs {
			if !healthy(ctx, client, "http://"+a+"/health") {
				return false
			}
		}
		return true
	}, func() error {
		return fmt.Errorf("%s emulate exited before its servers were ready: %s", o.Binary, p.out.last())
	}, func() error {
		return fmt.Errorf("%s emulate: %d servers not ready within %v: %s", o.Binary, o.Servers, o.ReadyTimeout, p.out.last())
	})
	if err != nil {
		p.Stop(time.Second)
		return nil, 0, err
	}
	return f, p.pid, nil
}
