package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/filewatch"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/spf13/cobra"
)

// faultOptions are bench faults' flags.
type faultOptions struct {
	config, cpuProfile                string
	servers, swaps, kills, badReloads int
	rate                              float64
	duration, baseline                time.Duration
	seed                              uint64
	asJSON                            bool
}

// The load of bench faults: small streamed completions with a TTFT objective, a bounded number in
// flight.
const (
	faultMaxTokens   = 8
	faultSLOTTFTMs   = 500
	faultMaxInFlight = 2000
	// faultRequestTimeout bounds one request, stream included.
	faultRequestTimeout = 30 * time.Second
	// faultSwapSlot is the slot the swaps serve alternately with two scorer configurations.
	faultSwapSlot = "scorers.0"
	// faultRestartTimeout bounds the wait for a killed plugin to serve again.
	faultRestartTimeout = 30 * time.Second
	// faultRestartPoll is how often GET /admin/pipeline is asked whether a killed plugin is back.
	faultRestartPoll = 10 * time.Millisecond
	// faultSettle is how long a restored config file is left for the router's file watcher to
	// reload it (its debounce and the reload) before the next fault.
	faultSettle = filewatch.Debounce + 300*time.Millisecond
	// faultFailureSamples caps the failed requests listed with their time.
	faultFailureSamples = 20
)

// faultKind is what one fault does.
type faultKind int

const (
	faultSwap faultKind = iota
	faultKill
	faultBadReload
)

func (k faultKind) String() string {
	switch k {
	case faultSwap:
		return "swap"
	case faultKill:
		return "kill"
	case faultBadReload:
		return "bad-reload"
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// plannedFault is one entry of the fault schedule: the N-th fault of its kind, due At after the
// fault window opens.
type plannedFault struct {
	Kind faultKind
	N    int
	At   time.Duration
}

// faultEvent is one fault as performed, in the JSON.
type faultEvent struct {
	AtMs   float64 `json:"at_ms"` // since the load began (the baseline window included)
	Kind   string  `json:"kind"`
	OK     bool    `json:"ok"`
	TookMs float64 `json:"took_ms"`
	Detail string  `json:"detail,omitempty"`
}

// failureSample is one failed request with its send time, for lining failures up with faults.
type failureSample struct {
	AtMs   float64 `json:"at_ms"` // since the load began
	Reason string  `json:"reason"`
}

// faultResult is the JSON bench faults prints.
type faultResult struct {
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
	// TTFT percentiles of the successful requests sent in each window.
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
	FailureSamples []failureSample `json:"failure_samples,omitempty"`
	Faults         []faultEvent    `json:"faults"`
	WallSeconds    float64         `json:"wall_s"`
}

func newBenchFaults() *cobra.Command {
	var o faultOptions
	cmd := &cobra.Command{
		Use:   "faults",
		Short: "Measure requests through the router while its plugins are swapped, killed and badly reloaded",
		Long: "bench faults starts --servers emulated vLLM servers and the router of --config in front of them\n" +
			"(its endpoints and listeners replaced by the fleet and 127.0.0.1:0), and sends an open-loop load of\n" +
			"--rate streamed completions per second (Poisson arrivals, seeded; 8 tokens each, a 500 ms TTFT\n" +
			"objective; at most 2,000 in flight, more count as failed). The first --baseline of load runs\n" +
			"without faults; during the following --duration the bench performs, spread evenly over the window\n" +
			"and interleaved: --swaps PUT /admin/stages/scorers.0 alternating the latency scorer's\n" +
			"headroomSelectionStrategy between \"most\" and \"least\"; --kills SIGKILLs of a random plugin process,\n" +
			"each waited for until the plugin serves again with a new pid; and --bad-reloads POST /admin/reload\n" +
			"of an invalid config file (in turn: broken YAML, a missing plugin binary, an unknown parameter of\n" +
			"the scorer), each of which must answer 422 and leave the pipeline's generation unchanged, before\n" +
			"the valid file is restored.\n\n" +
			"The router reloads from its config file, and the bench must not touch yours: it serves a copy\n" +
			"written beside it (.faultbench-<pid>.yaml in the config's directory, so that relative plugin\n" +
			"paths and parameters resolve as in the original), which it removes when it ends. The config's\n" +
			"directory must therefore be writable.\n\n" +
			"A request succeeds when it answers 200 and its stream ends with data: [DONE]; TTFT is the time to\n" +
			"its first data event. Failed requests are counted by reason, never retried; the result is printed\n" +
			"whatever they are, and only a failed setup makes the command fail.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.OutOrStdout(), o.cpuProfile, o.asJSON,
				func() (*faultResult, error) { return benchFaults(cmd.Context(), o) }, printFaults)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "examples/pipeline.yaml", "the router's configuration (its endpoints and listeners are replaced; a copy beside it is served)")
	f.IntVar(&o.servers, "servers", 4, "emulated servers")
	f.Float64Var(&o.rate, "rate", 200, "requests per second (open loop, Poisson arrivals)")
	f.DurationVar(&o.duration, "duration", 30*time.Second, "length of the fault window")
	f.DurationVar(&o.baseline, "baseline", 10*time.Second, "length of the window of load without faults before it")
	f.IntVar(&o.swaps, "swaps", 20, "scorer swaps (PUT /admin/stages/scorers.0) in the fault window")
	f.IntVar(&o.kills, "kills", 5, "SIGKILLs of a random plugin process in the fault window")
	f.IntVar(&o.badReloads, "bad-reloads", 3, "reloads of an invalid config file in the fault window")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the arrivals, the fault order, the kill targets and the emulated servers")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write the CPU profile of this process (router, emulated servers and clients) to this file")
	return cmd
}

func (o faultOptions) check() error {
	switch {
	case o.servers < 1:
		return fmt.Errorf("--servers must be at least 1")
	case !(o.rate > 0) || math.IsInf(o.rate, 0):
		return fmt.Errorf("--rate must be a positive number")
	case o.duration <= 0 || o.baseline < 0:
		return fmt.Errorf("--duration must be positive and --baseline not negative")
	case o.swaps < 0 || o.kills < 0 || o.badReloads < 0:
		return fmt.Errorf("--swaps, --kills and --bad-reloads must not be negative")
	}
	return nil
}

// benchFaults runs the bench (see newBenchFaults).
func benchFaults(ctx context.Context, o faultOptions) (*faultResult, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	valid, err := os.ReadFile(o.config)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	orig, err := config.Parse(o.config, valid) // errors name the user's file, not the copy
	if err != nil {
		return nil, err
	}
	swapSpec, target, err := faultTargets(orig, o.config, o.swaps > 0, o.kills > 0)
	if err != nil {
		return nil, err
	}
	copyFile := filepath.Join(filepath.Dir(o.config), ".faultbench-"+strconv.Itoa(os.Getpid())+".yaml")
	removeCopy := func() { _ = os.Remove(copyFile); _ = os.Remove(copyFile + ".tmp") }
	atExit(removeCopy) // also on SIGINT/SIGTERM
	defer removeCopy()
	if err := writeAtomically(copyFile, valid); err != nil {
		return nil, fmt.Errorf("writing the bench's copy of the config beside it: %w", err)
	}
	cfg, err := config.Load(copyFile)
	if err != nil {
		return nil, err
	}
	tb, err := testbed.Start(ctx, cfg, testbed.Options{Servers: o.servers, Seed: o.seed, Log: logger()})
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	atExit(tb.Close)
	r := tb.Router
	adm := &adminClient{base: "http://" + r.AdminAddr(), token: cfg.AdminToken(), c: &http.Client{Timeout: 30 * time.Second}}
	defer adm.c.CloseIdleConnections()
	if _, err := adm.pipeline(ctx); err != nil {
		return nil, fmt.Errorf("the admin API: %w", err)
	}

	f := &faulter{adm: adm, file: copyFile, valid: valid, swap: swapSpec, target: target,
		rng: rand.New(rand.NewPCG(o.seed, 2))}
	load := newFaultLoad("http://"+r.Addr(), o.baseline)
	defer load.client.CloseIdleConnections()
	arrivals := arrivalTimes(o.rate, o.baseline+o.duration, o.seed)
	schedule := faultSchedule(o.swaps, o.kills, o.badReloads, o.duration, o.seed)

	began := time.Now()
	load.began = began
	faultsDone := make(chan []faultEvent, 1)
	go func() {
		var events []faultEvent
		for _, pf := range schedule {
			sleepUntil(ctx, began.Add(o.baseline+pf.At))
			if ctx.Err() != nil {
				break
			}
			start := time.Now()
			ev := f.perform(ctx, pf)
			ev.AtMs = ms(start.Sub(began))
			events = append(events, ev)
		}
		faultsDone <- events
	}()
	load.run(ctx, arrivals)
	events := <-faultsDone
	load.wait()
	res := load.result(o.baseline, o.baseline+o.duration)
	res.Config, res.Servers = o.config, o.servers
	res.WallSeconds = time.Since(began).Seconds()
	res.Faults = events
	tallyFaults(res, events, f.restartMs)
	return res, nil
}

// faultTargets returns the plugin spec of the swapped slot (when swaps are asked for it must be a
// latency-scorer) and the name of the plugin the bad reloads break: the swapped slot's, else the
// first plugin launched from a binary, else the first plugin. Kills need a plugin launched from a
// binary. Errors name file, the user's config.
func faultTargets(cfg *config.Config, file string, swaps, kills bool) (config.PluginSpec, string, error) {
	var spec config.PluginSpec
	ref, _, err := cfg.SlotRef(faultSwapSlot)
	if err == nil {
		if p := cfg.Plugin(ref.PluginRef); p != nil {
			spec = *p
		}
	}
	if swaps && spec.Type != "latency-scorer" {
		if err != nil {
			return spec, "", fmt.Errorf("%s: --swaps needs slot %s: %w", file, faultSwapSlot, err)
		}
		return spec, "", fmt.Errorf("%s: --swaps alternates latency-scorer configurations in slot %s, which is served by a %q (use --swaps 0)",
			file, faultSwapSlot, spec.Type)
	}
	i := slices.IndexFunc(cfg.Plugins, func(p config.PluginSpec) bool { return !p.Builtin() })
	if kills && i < 0 {
		return spec, "", fmt.Errorf("%s: no plugin is launched from a binary, so there is no process to kill (use --kills 0)", file)
	}
	switch {
	case spec.Name != "" && !spec.Builtin():
		return spec, spec.Name, nil
	case i >= 0:
		return spec, cfg.Plugins[i].Name, nil
	case spec.Name != "":
		return spec, spec.Name, nil
	case len(cfg.Plugins) > 0:
		return spec, cfg.Plugins[0].Name, nil
	}
	return spec, "", fmt.Errorf("%s: the config declares no plugin", file)
}

// faultSchedule spreads swaps, kills and bad reloads evenly over window, interleaved: the i-th of
// c faults of one kind is ranked at (i+u)/c, u seeded in [0.25, 0.75), so every kind covers the
// window evenly and the kinds alternate; the ranked faults then take the centres of len equal
// slots of the window.
func faultSchedule(swaps, kills, badReloads int, window time.Duration, seed uint64) []plannedFault {
	rng := rand.New(rand.NewPCG(seed, 1))
	type ranked struct {
		f    plannedFault
		rank float64
	}
	var all []ranked
	for _, k := range []struct {
		kind faultKind
		n    int
	}{{faultSwap, swaps}, {faultKill, kills}, {faultBadReload, badReloads}} {
		for i := range k.n {
			all = append(all, ranked{plannedFault{Kind: k.kind, N: i}, (float64(i) + 0.25 + rng.Float64()/2) / float64(k.n)})
		}
	}
	slices.SortStableFunc(all, func(a, b ranked) int {
		if a.rank < b.rank {
			return -1
		} else if a.rank > b.rank {
			return 1
		}
		return 0
	})
	out := make([]plannedFault, len(all))
	for j, r := range all {
		r.f.At = time.Duration((float64(j) + 0.5) / float64(len(all)) * float64(window))
		out[j] = r.f
	}
	return out
}

// arrivalTimes returns the send times, from the start of the load, of a Poisson stream of rate
// requests per second over d, seeded.
func arrivalTimes(rate float64, d time.Duration, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0))
	out := make([]time.Duration, 0, int(rate*d.Seconds()*1.1)+16)
	for t := rng.ExpFloat64() / rate; t < d.Seconds(); t += rng.ExpFloat64() / rate {
		out = append(out, time.Duration(t*float64(time.Second)))
	}
	return out
}

// tallyFaults counts the performed faults into res.
func tallyFaults(res *faultResult, events []faultEvent, restartMs []float64) {
	for _, ev := range events {
		switch ev.Kind {
		case faultSwap.String():
			if ev.OK {
				res.Swaps++
			} else {
				res.SwapFailures++
			}
		case faultKill.String():
			if ev.OK {
				res.Kills++
			} else {
				res.KillFailures++
			}
		case faultBadReload.String():
			if ev.OK {
				res.BadReloadsRejected++
			} else {
				res.BadReloadFailures++
			}
		}
	}
	res.RestartMs = append(res.RestartMs, restartMs...)
	for _, r := range restartMs {
		res.MaxRestartMs = max(res.MaxRestartMs, r)
	}
}

// pctMs is pct in milliseconds, 0 for no latencies.
func pctMs(lat []time.Duration, q float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	return math.Round(pct(lat, q)) / 1000
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

func printFaults(w io.Writer, r *faultResult) error {
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
