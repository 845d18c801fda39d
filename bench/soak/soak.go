// Package soak is `foresight bench soak`: a long open-loop load through the router, run as its
// own `foresight serve` process, with plugin kills and stage swaps spread over it, that shows
// three things. Every request got a complete, correct answer (none lost, none wrong); the
// router's memory and goroutines stay flat (least-squares slopes per minute of samples taken
// every few seconds after a warm-up), and its plugins' memory with them; and the router's own
// metrics account for every request the load sent. [Run] runs it; [Result] is what it found,
// with a verdict.
//
// It shares the fault schedule and the faulter with bench faults (bench/chaos), the Poisson
// arrivals sent open loop (bench/openloop), and the router process with bench live and proxy
// (bench.StartRouter). What is its own: the mix of requests and the check of each answer
// (call.go, answer.go), the samples and their trends (sample.go, trend.go), the accounting
// against the router's metrics (account.go) and the result (result.go).
package soak

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/foresight-router/foresight/bench"
	"github.com/foresight-router/foresight/bench/chaos"
	"github.com/foresight-router/foresight/bench/openloop"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/testbed"
)

// Options are what Run does: bench soak's flags.
type Options struct {
	// Config is the router's config file; its endpoints and listeners are replaced on the
	// command line of `foresight serve`.
	Config string
	// Binary is the foresight binary whose serve command runs Config (the command passes its own).
	Binary string
	// Servers is the number of emulated servers, at least 1; Preset their engine preset or mixed
	// fleet (engine.Fleet; "" is testbed.DefaultPreset).
	Servers int
	Preset  string
	// Rate is the requests per second (open loop, Poisson arrivals), positive; Duration the
	// length of the load, positive. Rate × Duration is at most MaxRequests.
	Rate     float64
	Duration time.Duration
	// Warmup is left out of the slopes' fits, in [0, Duration); SampleEvery is the time between
	// two samples of the router and its plugins, at least MinSampleEvery.
	Warmup, SampleEvery time.Duration
	// KillEvery, SwapEvery and StopEvery are the mean times between two plugin kills (SIGKILL),
	// two stage swaps and two plugin freezes (SIGSTOP): Duration / KillEvery kills (rounded down)
	// spread over the load; 0 is none.
	KillEvery, SwapEvery, StopEvery time.Duration
	// TruncateEvery puts a chaos.Truncator in front of the first server, ending every
	// TruncateEvery-th stream it serves early without data: [DONE]; 0 is none.
	TruncateEvery int
	// Drain is the streams (and a quarter as many whole requests) in flight when the bench ends
	// the router with SIGTERM, after the load: each must end complete or with the router's error
	// (drain.go). 0 stops the router without them.
	Drain int
	// MaxTokens is the longest answer asked for, in [1, MaxMaxTokens]: each request asks for
	// between 1 and MaxTokens tokens.
	MaxTokens int
	// Seed seeds the arrivals, the request mix, the fault order, the kill targets and the
	// emulated servers.
	Seed uint64
	// AtExit, when set, registers the stop functions of the router process and the emulated
	// servers with the caller's exit handling, so that they also run on SIGINT or SIGTERM (Run
	// runs them itself before it returns).
	AtExit func(func())
}

// The bounds of Options and the load's constants.
const (
	// MaxRequests bounds Rate × Duration: the arrivals are drawn before the load starts.
	MaxRequests = 2_000_000
	// MinSampleEvery bounds the sampling period from below: each sample scrapes the router.
	MinSampleEvery = 100 * time.Millisecond
	// MaxMaxTokens bounds MaxTokens.
	MaxMaxTokens = 4096
	// maxInFlight bounds the requests in flight; an arrival beyond it is not sent (skipped).
	maxInFlight = 2000
	// requestTimeout bounds one request, stream included.
	requestTimeout = 30 * time.Second
	// sloTTFTMs is every request's TTFT objective (x-llm-d-slo-ttft-ms), as bench faults sends.
	sloTTFTMs = 500
	// stopTail is the load kept after the fault window when plugins are frozen (SIGSTOP): the
	// router sees a plugin hang only through the calls it misses, so a freeze needs load after it.
	stopTail = 5 * time.Second
	// countedWithin bounds the wait, after the last answer, for the router's metrics to count
	// every request: it counts a request after its last byte is written.
	countedWithin = 5 * time.Second
)

// check says what is wrong with the options, naming the flags.
func (o *Options) check() error {
	switch {
	case o.Binary == "":
		return fmt.Errorf("the foresight binary to run the router is not known")
	case o.Servers < 1:
		return fmt.Errorf("--servers must be at least 1, got %d", o.Servers)
	case !(o.Rate > 0) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("--rate must be a positive number of requests/s, got %v", o.Rate)
	case o.Duration <= 0:
		return fmt.Errorf("--duration must be positive, got %v", o.Duration)
	case o.Rate*o.Duration.Seconds() > MaxRequests:
		return fmt.Errorf("--rate %v for --duration %v is %.0f requests, more than %d", o.Rate, o.Duration, o.Rate*o.Duration.Seconds(), MaxRequests)
	case o.Warmup < 0 || o.Warmup >= o.Duration:
		return fmt.Errorf("--warmup must be in [0, --duration), got %v", o.Warmup)
	case o.SampleEvery < MinSampleEvery:
		return fmt.Errorf("--sample-every must be at least %v, got %v", MinSampleEvery, o.SampleEvery)
	case o.KillEvery < 0 || o.SwapEvery < 0 || o.StopEvery < 0:
		return fmt.Errorf("--kill-every, --swap-every and --stop-every must not be negative (0: none)")
	case o.StopEvery > 0 && o.Duration <= stopTail:
		return fmt.Errorf("--stop-every needs a --duration over %v (the router sees a frozen plugin through the calls it misses), got %v", stopTail, o.Duration)
	case o.TruncateEvery < 0:
		return fmt.Errorf("--truncate-every must not be negative (0: none), got %d", o.TruncateEvery)
	case o.Drain < 0 || o.Drain > MaxDrain:
		return fmt.Errorf("--drain must be in [0, %d], got %d", MaxDrain, o.Drain)
	case o.MaxTokens < 1 || o.MaxTokens > MaxMaxTokens:
		return fmt.Errorf("--max-tokens must be in [1, %d], got %d", MaxMaxTokens, o.MaxTokens)
	}
	return nil
}

// every returns how many faults one every interval makes over d: 0 for no interval.
func every(d, interval time.Duration) int {
	if interval <= 0 {
		return 0
	}
	return int(d / interval)
}

// Run starts o.Servers emulated vLLM servers and the router of o.Config in front of them, as its
// own `foresight serve` process, and sends o.Rate requests per second for o.Duration, open loop:
// completions and chat completions, streamed or not, each checked to the end (see call and
// answer). Over the same time it kills a random plugin process every o.KillEvery, freezes one
// every o.StopEvery and swaps the latency scorer of scorers.0 for its other strategy every
// o.SwapEvery (bench/chaos), in a seeded, interleaved order (ending stopTail before the load when
// it freezes any), while a chaos.Truncator in front of the first server cuts every
// o.TruncateEvery-th stream; and it samples every o.SampleEvery the router's RSS and goroutines
// and its plugins' RSS. After the last answer it reads the router's metrics to account for every
// request, then ends the router with SIGTERM while o.Drain streams are in flight (drain.go). It
// stops the router and the servers before it returns. Lost, wrong or silently cut requests are
// counted, never retried, and make the verdict fail; only a failed setup is an error.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return nil, err
	}
	counts := chaos.Counts{Kills: every(o.Duration, o.KillEvery), Swaps: every(o.Duration, o.SwapEvery), Stops: every(o.Duration, o.StopEvery)}
	var swapFlag, killFlag string // the flags asking for faults, for Targets' errors
	if counts.Swaps > 0 {
		swapFlag = "--swap-every"
	}
	switch {
	case counts.Kills > 0:
		killFlag = "--kill-every"
	case counts.Stops > 0:
		killFlag = "--stop-every"
	}
	swapSpec, _, err := chaos.Targets(cfg, o.Config, swapFlag, killFlag)
	if err != nil {
		return nil, err
	}
	atExit := func(f func()) {
		if o.AtExit != nil {
			o.AtExit(f)
		}
	}
	fleet, err := emulator.Start(o.Servers, 0, cmp.Or(o.Preset, testbed.DefaultPreset), o.Seed)
	if err != nil {
		return nil, err
	}
	stopFleet := sync.OnceFunc(fleet.Close)
	atExit(stopFleet)
	defer stopFleet()
	addrs := fleet.Addrs()
	var trunc *chaos.Truncator
	if o.TruncateEvery > 0 {
		if trunc, err = chaos.StartTruncator(addrs[0], o.TruncateEvery, o.Seed); err != nil {
			return nil, err
		}
		stopTrunc := sync.OnceFunc(trunc.Close)
		atExit(stopTrunc)
		defer stopTrunc()
		addrs[0] = trunc.Addr()
	}
	proc, err := bench.StartRouter(ctx, o.Binary, o.Config, addrs, []string{"--log-level", "error"},
		emulator.DefaultModel, bench.DefaultLiveReadyTimeout)
	if err != nil {
		return nil, err
	}
	stopRouter := func() { proc.Stop(bench.DefaultLiveStopGrace) }
	atExit(stopRouter)
	defer stopRouter()
	adm := chaos.NewAdmin("http://"+proc.Admin(), cfg.AdminToken())
	defer adm.Close()
	before, err := scrape(ctx, adm)
	if err != nil {
		return nil, fmt.Errorf("the router's metrics: %w", err)
	}

	f := &chaos.Faulter{Admin: adm, Swap: swapSpec, Rand: rand.New(rand.NewPCG(o.Seed, 2))}
	window := o.Duration
	if counts.Stops > 0 {
		window -= stopTail
	}
	plan := chaos.Schedule(counts, window, o.Seed)
	arrivals := openloop.Arrivals(o.Rate, o.Duration, o.Seed)
	l := newLoad("http://"+proc.API(), o.Seed, o.MaxTokens, arrivals)
	defer l.client.CloseIdleConnections()

	began := time.Now()
	smp := startSampler(ctx, proc.PID(), adm, began, o.SampleEvery)
	faultsDone := make(chan []chaos.Event, 1)
	go func() { faultsDone <- f.Run(ctx, plan, began, 0) }()
	sent := openloop.Run(ctx, began, arrivals, maxInFlight, l.send, l.skip)
	events := <-faultsDone
	s := smp.finish(ctx)
	span := time.Since(began)
	after, err := counted(ctx, adm, before, sent)
	if err != nil {
		return nil, fmt.Errorf("the router's metrics after the load: %w", err)
	}
	res := l.result(sent, span)
	res.Config, res.Servers, res.Rate, res.Seed = o.Config, o.Servers, o.Rate, o.Seed
	res.DurationSeconds, res.WarmupSeconds, res.SampleEverySeconds = o.Duration.Seconds(), o.Warmup.Seconds(), o.SampleEvery.Seconds()
	res.RouterPID = proc.PID()
	res.faults(events, f.RestartMs(), f.RecoverMs())
	res.trends(s, o.Warmup)
	res.Accounting = account(before, after, sent, res.Lost+res.Wrong+res.Shed+res.Cut)
	if cpu, ok := after.Sum(metricCPU); ok && sent > 0 {
		c0, _ := before.Sum(metricCPU)
		res.RouterCPUMsPerRequest = round3((cpu - c0) * 1000 / float64(sent))
	}
	if trunc != nil {
		trunc.Spare() // the drain is about the SIGTERM alone
		c := trunc.Counts()
		res.Truncated = &c
	}
	if o.Drain > 0 {
		res.Drain = drain(ctx, proc, o.Drain, o.Seed, cfg.Server.ShutdownGrace)
	}
	res.verdict()
	res.WallSeconds = round3(time.Since(began).Seconds())
	return res, nil
}
