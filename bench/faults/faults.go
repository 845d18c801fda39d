// Package faults is `foresight bench faults`: requests through the router while its plugins are
// swapped, killed and badly reloaded. [Run] starts emulated servers with the router in front
// (sim/testbed), sends an open-loop load and performs the faults on a seeded schedule; [Result]
// is what it measured.
//
// It is a sub-package of bench rather than part of it because it is a bench with a vocabulary of
// its own, which it shares with bench soak: the fault schedule and the faulter that performs each
// fault through the router's admin API are bench/chaos, the Poisson arrivals sent open loop
// bench/openloop; what is its own is the load's request and its per-request outcomes (load.go)
// and their summary by window. It follows bench's conventions (Options, Run, Result with
// WriteText, AtExit, percentiles by internal/quantile).
package faults

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/bench/chaos"
	"github.com/foresight-router/foresight/bench/openloop"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/rs/zerolog"
)

// Options are what Run does: bench faults' flags.
type Options struct {
	// Config is the router's config file. Its endpoints and listeners are replaced, and the
	// router serves a copy written beside it, so its directory must be writable.
	Config string
	// Servers is the number of emulated servers, at least 1.
	Servers int
	// Swaps, Kills and BadReloads are the faults of each kind in the fault window, not negative.
	Swaps, Kills, BadReloads int
	// Rate is the requests per second (open loop, Poisson arrivals), positive.
	Rate float64
	// Duration is the fault window's length, positive; Baseline that of the window of load
	// without faults before it, not negative.
	Duration, Baseline time.Duration
	// Seed seeds the arrivals, the fault order, the kill targets and the emulated servers.
	Seed uint64
	// Log is the router's logger; the zero value logs nothing.
	Log zerolog.Logger
	// AtExit, when set, registers the stop functions of the router, the servers and the config
	// copy's removal with the caller's exit handling, so that they also run on SIGINT or SIGTERM
	// (Run runs them itself before it returns).
	AtExit func(func())
}

// The load of bench faults: small streamed completions with a TTFT objective, a bounded number in
// flight.
const (
	maxTokens   = 8
	sloTTFTMs   = 500
	maxInFlight = 2000
	// requestTimeout bounds one request, stream included.
	requestTimeout = 30 * time.Second
	// failureSamples caps the failed requests listed with their time.
	failureSamples = 20
)

// FailureSample is one failed request with its send time, for lining failures up with faults.
type FailureSample struct {
	AtMs   float64 `json:"at_ms"` // since the load began
	Reason string  `json:"reason"`
}

// Result is what Run measured; its JSON is bench faults'.
type Result struct {
	Config  string `json:"config"`
	Servers int    `json:"servers"`
	// Requests were scheduled over both windows; Failed did not end in HTTP 200 and data: [DONE]
	// (requests refused for the in-flight bound included).
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// Swaps, Kills and BadReloadsRejected count the faults that were performed as intended: a swap
	// answered 200; a killed plugin served again with a new pid; a bad reload answered 422 and
	// left the generation as it was.
	Swaps              int `json:"swaps"`
	Kills              int `json:"kills"`
	BadReloadsRejected int `json:"bad_reloads_rejected"`
	// MaxRestartMs is the longest restart of a killed plugin: per kill the larger of the plugin's
	// last_restart_ms and the bench's own kill-to-serving time.
	MaxRestartMs float64 `json:"max_restart_ms"`
	// TTFT percentiles (internal/quantile) of the successful requests sent in each window.
	P99TTFTFaultsMs   float64 `json:"p99_ttft_ms_during_faults"`
	P99TTFTBaselineMs float64 `json:"p99_ttft_ms_baseline"`
	P50TTFTFaultsMs   float64 `json:"p50_ttft_ms_during_faults"`
	P50TTFTBaselineMs float64 `json:"p50_ttft_ms_baseline"`

	RequestsBaseline     int `json:"requests_baseline"`
	FailedBaseline       int `json:"failed_baseline"`
	RequestsDuringFaults int `json:"requests_during_faults"`
	FailedDuringFaults   int `json:"failed_during_faults"`
	// RateAchieved is the requests actually sent per second of load.
	RateAchieved      float64 `json:"rate_achieved"`
	SwapFailures      int     `json:"swap_failures"`
	KillFailures      int     `json:"kill_failures"`
	BadReloadFailures int     `json:"bad_reload_failures"`
	// RestartMs lists every kill's restart time, in order.
	RestartMs []float64 `json:"restart_ms"`
	// Failures counts the failed requests by reason.
	Failures       map[string]int  `json:"failures"`
	FailureSamples []FailureSample `json:"failure_samples,omitempty"`
	// Faults are the faults as performed, timed from the start of the load (the baseline window
	// included).
	Faults      []chaos.Event `json:"faults"`
	WallSeconds float64       `json:"wall_s"`
}

// check says what is wrong with the options' numbers, naming the flags.
func (o *Options) check() error {
	switch {
	case o.Servers < 1:
		return fmt.Errorf("--servers must be at least 1")
	case !(o.Rate > 0) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("--rate must be a positive number")
	case o.Duration <= 0 || o.Baseline < 0:
		return fmt.Errorf("--duration must be positive and --baseline not negative")
	case o.Swaps < 0 || o.Kills < 0 || o.BadReloads < 0:
		return fmt.Errorf("--swaps, --kills and --bad-reloads must not be negative")
	}
	return nil
}

// Run starts o.Servers emulated vLLM servers and the router of o.Config in front of them
// (sim/testbed), serving a copy of the config written beside it (.faultbench-<pid>.yaml, so that
// relative plugin paths and parameters resolve as in the original; removed when Run returns).
// It sends an open-loop load of o.Rate streamed completions per second: o.Baseline of it without
// faults, then o.Duration during which it performs, spread evenly and interleaved, o.Swaps
// PUT /admin/stages/scorers.0 alternating the latency scorer's headroomSelectionStrategy, o.Kills
// SIGKILLs of a random plugin process (each waited for until the plugin serves again with a new
// pid) and o.BadReloads reloads of an invalid config file, which must answer 422 and leave the
// generation unchanged. Failed requests are counted by reason, never retried: only a failed setup
// is an error.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	valid, err := os.ReadFile(o.Config)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	orig, err := config.Parse(o.Config, valid) // errors name the user's file, not the copy
	if err != nil {
		return nil, err
	}
	swapSpec, target, err := chaos.Targets(orig, o.Config, flagIf(o.Swaps > 0, "--swaps"), flagIf(o.Kills > 0, "--kills"))
	if err != nil {
		return nil, err
	}
	copyFile := filepath.Join(filepath.Dir(o.Config), ".faultbench-"+strconv.Itoa(os.Getpid())+".yaml")
	removeCopy := func() { _ = os.Remove(copyFile); _ = os.Remove(copyFile + ".tmp") }
	onExit(o.AtExit, removeCopy) // also on SIGINT/SIGTERM
	defer removeCopy()
	if err := chaos.WriteAtomically(copyFile, valid); err != nil {
		return nil, fmt.Errorf("writing the bench's copy of the config beside it: %w", err)
	}
	cfg, err := config.Load(copyFile)
	if err != nil {
		return nil, err
	}
	tb, err := testbed.Start(ctx, cfg, testbed.Options{Servers: o.Servers, Seed: o.Seed, Log: o.Log})
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	onExit(o.AtExit, tb.Close)
	r := tb.Router
	adm := chaos.NewAdmin("http://"+r.AdminAddr(), cfg.AdminToken())
	defer adm.Close()
	if _, err := adm.Pipeline(ctx); err != nil {
		return nil, fmt.Errorf("the admin API: %w", err)
	}

	f := &chaos.Faulter{Admin: adm, Swap: swapSpec, File: copyFile, Valid: valid, Target: target,
		Rand: rand.New(rand.NewPCG(o.Seed, 2))}
	l := newLoad("http://"+r.Addr(), o.Baseline)
	defer l.client.CloseIdleConnections()
	arrivals := openloop.Arrivals(o.Rate, o.Baseline+o.Duration, o.Seed)
	plan := chaos.Schedule(chaos.Counts{Swaps: o.Swaps, Kills: o.Kills, BadReloads: o.BadReloads}, o.Duration, o.Seed)

	began := time.Now()
	faultsDone := make(chan []chaos.Event, 1)
	go func() { faultsDone <- f.Run(ctx, plan, began, o.Baseline) }()
	l.run(ctx, began, arrivals)
	events := <-faultsDone
	res := l.result(o.Baseline, o.Baseline+o.Duration)
	res.Config, res.Servers = o.Config, o.Servers
	res.WallSeconds = time.Since(began).Seconds()
	res.Faults = events
	tally(res, events, f.RestartMs())
	return res, nil
}

// flagIf returns flag when cond holds, else "".
func flagIf(cond bool, flag string) string {
	if cond {
		return flag
	}
	return ""
}

// tally counts the performed faults into res.
func tally(res *Result, events []chaos.Event, restartMs []float64) {
	t := chaos.Count(events)
	res.Swaps, res.SwapFailures = t.Swaps, t.SwapFailures
	res.Kills, res.KillFailures = t.Kills, t.KillFailures
	res.BadReloadsRejected, res.BadReloadFailures = t.BadReloads, t.BadReloadFailures
	res.RestartMs = append(res.RestartMs, restartMs...)
	for _, r := range restartMs {
		res.MaxRestartMs = max(res.MaxRestartMs, r)
	}
}

// WriteText prints the result as bench faults' text.
func (r *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s on %d emulated servers, %.0f requests/s sent\n", r.Config, r.Servers, r.RateAchieved)
	fmt.Fprintf(w, "requests: %d, failed %d (baseline %d of %d, during faults %d of %d)\n",
		r.Requests, r.Failed, r.FailedBaseline, r.RequestsBaseline, r.FailedDuringFaults, r.RequestsDuringFaults)
	fmt.Fprintf(w, "TTFT baseline p50 %.1f p99 %.1f ms; during faults p50 %.1f p99 %.1f ms\n",
		r.P50TTFTBaselineMs, r.P99TTFTBaselineMs, r.P50TTFTFaultsMs, r.P99TTFTFaultsMs)
	fmt.Fprintf(w, "faults: %d swaps (%d failed), %d kills (%d failed, max restart %.1f ms), %d bad reloads rejected (%d not)\n",
		r.Swaps, r.SwapFailures, r.Kills, r.KillFailures, r.MaxRestartMs, r.BadReloadsRejected, r.BadReloadFailures)
	for _, ev := range r.Faults {
		if !ev.OK {
			fmt.Fprintf(w, "  failed %s at %.0f ms: %s\n", ev.Kind, ev.AtMs, ev.Detail)
		}
	}
	reasons := slices.Sorted(maps.Keys(r.Failures))
	for _, k := range reasons {
		fmt.Fprintf(w, "  %6d × %s\n", r.Failures[k], k)
	}
	return nil
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// onExit registers f with the caller's atExit hook, when there is one.
func onExit(atExit func(func()), f func()) {
	if atExit != nil {
		atExit(f)
	}
}
