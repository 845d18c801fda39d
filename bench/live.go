package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/foresight-router/foresight/internal/procstat"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/foresight-router/foresight/sim/workload"
)

// Defaults of LiveOptions.
const (
	// DefaultLiveMaxDuration bounds the arrivals of a live run: the workload is cut there.
	DefaultLiveMaxDuration = 2 * time.Minute
	// DefaultLiveDrain is how long requests in flight after the last arrival may finish.
	DefaultLiveDrain = 30 * time.Second
	// DefaultLiveReadyTimeout bounds the wait for a router to be ready (plugins started, the
	// fleet scraped).
	DefaultLiveReadyTimeout = 30 * time.Second
	// DefaultLiveStopGrace is how long a router has to exit after SIGTERM before its process
	// group is killed.
	DefaultLiveStopGrace = 10 * time.Second
	// DefaultLiveMaxInFlight caps the requests in flight: far above what a few emulated
	// servers run at once, so that an arrival is skipped (and counted) only under a pile-up.
	DefaultLiveMaxInFlight = 2048
	// livePollPeriod is how often the servers' waiting queues are sampled.
	livePollPeriod = 100 * time.Millisecond
)

// The client-side references of --baselines.
const (
	BaselineRoundRobin       = "round-robin"
	BaselineLeastOutstanding = "least-outstanding"
)

// LiveOptions are what RunLive measures: bench live's flags.
type LiveOptions struct {
	// Configs are the router configs, comma-separated; Baselines the client-side references,
	// comma-separated: round-robin, least-outstanding, or none.
	Configs, Baselines string
	// Scenario is the workload (sim/workload), Trace the trace file of the trace scenarios,
	// Preset the emulated servers' engine preset ("" is testbed.DefaultPreset).
	Scenario, Trace, Preset string
	// Classes are request classes NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream].
	Classes []string
	// Servers is the number of emulated servers; Requests the requests to generate (0: the
	// scenario's default; traces: every row, up to MaxDuration).
	Servers, Requests int
	// Rate is the arrival rate per server in requests/s (0: the scenario's default; traces:
	// their own pace); Speedup then divides every arrival time (0 is 1).
	Rate, Speedup float64
	// Load, when set, sets the rate instead: Load × the live saturation rate per server
	// (LiveSaturation), which Saturation gives or probes of Probe's arrivals each measure
	// (default DefaultLiveProbe).
	Load, Saturation float64
	Probe            time.Duration
	// Seed seeds the workload and the engines' noise.
	Seed uint64
	// Prefill and Decode, when set, make the emulated fleet prefill/decode disaggregated: the
	// first Prefill servers of role prefill, the next Decode of role decode (Servers is their
	// sum), and the routers serve it with Split (disaggregation.split; "": the config's, else
	// adaptive). Client baselines send whole requests to every server. KillPrefill, when set,
	// stops the first prefill server this long into each run (live_disagg.go).
	Prefill, Decode int
	Split           string
	KillPrefill     time.Duration
	// EngineCPU is --engine-cpu (ParseEngineCPU): the CPU the emulated servers burn per token.
	// When set, each run's servers run in a `foresight emulate` process of their own (from
	// Binary), whose CPU time LiveRun.EnginesCPUSeconds reports.
	EngineCPU string
	// Replicas, above 1, runs each config as that many `foresight serve` processes, the client
	// spreading the requests over them round robin as a gateway does; State (StateNATS, the
	// default, or StateNone) says whether they share a state plane (live_replicas.go).
	Replicas int
	State    string
	// KVEvents makes the emulated servers publish their KV-cache events and the routers read
	// them (serve --kv-events); Shared sends that fraction of the requests straight to the
	// servers from another client, which no router sees (live_shared.go).
	KVEvents bool
	Shared   float64
	// MaxDuration cuts the workload: arrivals at or after it are not generated for any run
	// (default DefaultLiveMaxDuration). Drain is how long requests in flight after the last
	// arrival may finish before they are cut (default DefaultLiveDrain).
	MaxDuration, Drain time.Duration
	// Binary is the foresight binary whose serve command runs each config (the command passes
	// its own, os.Executable). Required when Configs is not empty.
	Binary string
	// RouterLogLevel is the routers' --log-level (default info: their access lines give
	// LiveRun.AddedTTFT).
	RouterLogLevel string
	// RouterCPUProfiles, when set, is a directory where each router writes its CPU profile
	// (serve --cpuprofile), named after the run (its config's file name, .pprof for .yaml).
	RouterCPUProfiles string
	// ReadyTimeout, StopGrace and MaxInFlight default to DefaultLiveReadyTimeout,
	// DefaultLiveStopGrace and DefaultLiveMaxInFlight.
	ReadyTimeout, StopGrace time.Duration
	MaxInFlight             int
	// Progress, when set, gets a line as each run starts and ends.
	Progress io.Writer
	// AtExit, when set, registers the stop of each router process and emulated fleet (see the
	// package documentation).
	AtExit func(func())
}

// liveRunSpec is one run: a router config, or a client-side baseline.
type liveRunSpec struct {
	name, config, baseline string
	objectives             bool // the router knows every objective the workload sends
	classObjectives        bool // it declares one objective per class: the class is sent as the objective
}

// RunLive generates one workload, then replays it in real time, open loop, once per router
// config and once per baseline, each time against fresh emulated servers (sim/emulator): through
// the config's router, run as a separate `foresight serve` process exactly as a user runs it,
// or with the client choosing the server itself (round-robin, least-outstanding). Every run
// gets the same arrivals. A config whose router cannot start is reported unavailable.
func RunLive(ctx context.Context, o LiveOptions) (*LiveResult, error) {
	o.Preset = cmp.Or(o.Preset, testbed.DefaultPreset)
	o.Speedup = cmp.Or(o.Speedup, 1)
	o.MaxDuration = cmp.Or(o.MaxDuration, DefaultLiveMaxDuration)
	o.Drain = cmp.Or(o.Drain, DefaultLiveDrain)
	o.ReadyTimeout = cmp.Or(o.ReadyTimeout, DefaultLiveReadyTimeout)
	o.StopGrace = cmp.Or(o.StopGrace, DefaultLiveStopGrace)
	o.MaxInFlight = cmp.Or(o.MaxInFlight, DefaultLiveMaxInFlight)
	o.RouterLogLevel = cmp.Or(o.RouterLogLevel, "info")
	o.Probe = cmp.Or(o.Probe, DefaultLiveProbe)
	if err := o.validate(); err != nil {
		return nil, err
	}
	engineCPU, err := ParseEngineCPU(o.EngineCPU)
	if err != nil {
		return nil, err
	}
	if engineCPU.On && o.Binary == "" {
		return nil, fmt.Errorf("--engine-cpu: the foresight binary to run the emulated servers is not known")
	}
	cost, sat, err := liveLoad(ctx, &o, engineCPU)
	if err != nil {
		return nil, err
	}
	w, classes, err := liveWorkload(o)
	if err != nil {
		return nil, err
	}
	if sat == nil {
		cost = engineCPU.resolve(w)
	}
	specs, err := liveRuns(o, w)
	if err != nil {
		return nil, err
	}
	res := newLiveResult(o, w)
	res.Load, res.Saturation = o.Load, sat
	if engineCPU.On {
		res.EngineCPU = cost.String()
		if engineCPU.Share > 0 {
			res.EngineCPU += fmt.Sprintf(" (auto:%g on %d CPUs)", engineCPU.Share, runtime.NumCPU())
		}
	}
	for i, s := range specs {
		progress(o.Progress, "live: %d/%d %s: %d requests over %.1f s, %d servers\n", i+1, len(specs), s.name,
			len(w.Requests), res.SpanSeconds, o.Servers)
		run, _, err := runLive(ctx, o, s, w, classes, cost, engineCPU.On)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		if run.Unavailable != "" {
			progress(o.Progress, "live: %s: unavailable: %s\n", s.name, run.Unavailable)
		} else {
			progress(o.Progress, "live: %s: %d ok of %d sent in %.1f s\n", s.name, run.OK, run.Sent, run.WallSeconds)
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// validate says what is wrong with the options, naming the flags.
func (o *LiveOptions) validate() error {
	switch {
	case o.Servers < 1:
		return fmt.Errorf("--servers must be at least 1, got %d", o.Servers)
	case o.Requests < 0:
		return fmt.Errorf("--requests must be >= 0, got %d", o.Requests)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("--rate must be a number of requests/s >= 0, got %v", o.Rate)
	case o.Speedup < 0 || math.IsNaN(o.Speedup) || math.IsInf(o.Speedup, 0):
		return fmt.Errorf("--speedup must be a factor > 0, got %v", o.Speedup)
	case o.MaxDuration < 0:
		return fmt.Errorf("--max-duration must be > 0, got %v", o.MaxDuration)
	case o.Drain < 0:
		return fmt.Errorf("--drain must be >= 0, got %v", o.Drain)
	case o.Load < 0 || o.Load > 2 || math.IsNaN(o.Load):
		return fmt.Errorf("--load must be a fraction of the saturation rate in (0, 2], got %v", o.Load)
	case o.Saturation < 0 || math.IsNaN(o.Saturation) || math.IsInf(o.Saturation, 0):
		return fmt.Errorf("--saturation must be a rate per server in requests/s > 0, got %v", o.Saturation)
	case o.Probe <= 0:
		return fmt.Errorf("--probe must be > 0, got %v", o.Probe)
	case o.Load == 0 && o.Saturation > 0:
		return fmt.Errorf("--saturation sets the rate the load of --load is a fraction of: give --load too")
	case o.Load > 0 && o.Rate > 0:
		return fmt.Errorf("--load sets the rate (load × the live saturation rate): give --load or --rate, not both")
	case o.Load > 0 && o.Speedup != 1:
		return fmt.Errorf("--load sets the rate (load × the live saturation rate): leave --speedup at 1")
	}
	if err := o.validateReplicas(); err != nil {
		return err
	}
	return o.validateDisaggregation()
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// runLive runs one config or baseline: fresh servers, the router process when there is one,
// the replay with the servers' queues sampled, then the router's metrics and CPU time; it stops
// the router and the servers before it returns, whatever happens. It returns the requests'
// results too.
func runLive(ctx context.Context, o LiveOptions, s liveRunSpec, w *workload.Workload, classes []workload.Class,
	cost emulator.CPUCost, engineCPU bool) (LiveRun, []loadgen.Result, error) {
	run := LiveRun{Name: s.name, Config: s.config, Client: s.baseline}
	fleet, fleetPID, err := startFleet(ctx, o, cost, engineCPU)
	if err != nil {
		return run, nil, err
	}
	stopFleet := sync.OnceFunc(fleet.Close)
	onExit(o.AtExit, stopFleet)
	defer stopFleet()
	addrs := fleet.Addrs()

	var results []loadgen.Result
	var mu sync.Mutex
	lo := loadgen.Options{Model: emulator.DefaultModel, Drain: o.Drain, MaxInFlight: o.MaxInFlight,
		OnResult: func(r loadgen.Result) {
			mu.Lock()
			defer mu.Unlock()
			results = append(results, r)
		}}
	var (
		routers          *liveRouters
		routerCPU, plugs *cpuMeter
	)
	if s.config != "" {
		args := []string{"--log-level", o.RouterLogLevel}
		if o.RouterCPUProfiles != "" {
			args = append(args, "--cpuprofile", filepath.Join(o.RouterCPUProfiles, strings.TrimSuffix(s.name, ".yaml")+".pprof"))
		}
		args = append(args, o.disaggregationArgs()...)
		args = append(args, kvEventsArgs(fleet)...)
		if routers, err = o.startRouters(ctx, s.config, addrs, args); err != nil {
			run.Unavailable = strings.Join(strings.Fields(err.Error()), " ")
			return run, results, nil
		}
		stopRouters := func() { routers.stop(o.StopGrace) }
		onExit(o.AtExit, stopRouters)
		defer stopRouters()
		run.RouterPID = routers.procs[0].pid
		if targets := routers.targets(); len(targets) == 1 {
			lo.BaseURL = targets[0]
		} else { // replicas behind a gateway that spreads requests round robin
			lo.Targets, lo.Chooser = targets, loadgen.NewRoundRobin(len(targets))
		}
		lo.OmitObjective, lo.ClassObjectives = !s.objectives, s.classObjectives
		run.ObjectiveHeader = s.objectives
		var kids []int // the plugin processes, all started before the routers are ready
		for _, pid := range routers.pids() {
			kids = append(kids, procstat.Children(procstat.Root, pid)...)
		}
		routerCPU, plugs = newCPUMeter(routers.pids()...), newCPUMeter(kids...)
		run.PluginProcesses = len(kids)
	} else {
		for _, a := range addrs {
			lo.Targets = append(lo.Targets, "http://"+a)
		}
		lo.Chooser = loadgen.NewRoundRobin(len(addrs))
		if s.baseline == BaselineLeastOutstanding {
			lo.Chooser = loadgen.NewLeastOutstanding(len(addrs))
		}
		run.ObjectiveHeader = true
	}
	lg, err := loadgen.New(lo)
	if err != nil {
		return run, nil, err
	}
	queues := pollQueues(addrs, livePollPeriod)
	host := newHostMeter()
	var engines *cpuMeter
	if fleetPID != 0 {
		engines = newCPUMeter(fleetPID)
	}
	own, direct, err := splitShared(w, o.Shared, len(addrs), o.Seed)
	if err != nil {
		return run, nil, err
	}
	other, err := startOtherClient(ctx, o, addrs, direct)
	if err != nil {
		return run, nil, err
	}
	stopKill := o.killPrefill(fleet, &run)
	began := time.Now()
	snap := lg.Run(ctx, own)
	run.Direct = other.wait()
	stopKill()
	run.WallSeconds = time.Since(began).Seconds()
	maxWaiting, meanWaiting := queues.stop()
	if b, ok := host.share(); ok {
		run.HostBusy = ptr(b)
	}
	if engines != nil {
		if d, ok := engines.used(); ok {
			run.EnginesCPUSeconds = ptr(d.Seconds())
		}
	}

	var fig routerFigures
	if routers != nil {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
		fig, err = readRouter(ctx, client, routers.procs[0].admin) // replicas: the first one's
		client.CloseIdleConnections()
		if err != nil {
			return run, nil, err
		}
		if d, ok := routerCPU.used(); ok {
			run.RouterCPUSeconds = ptr(d.Seconds())
		}
		if d, ok := plugs.used(); ok && len(plugs.pids) > 0 {
			run.PluginsCPUSeconds = ptr(d.Seconds())
		}
		routers.stop(o.StopGrace) // their output is all read once they have stopped
		run.AddedTTFT = routers.access().added(results)
	}
	stopFleet()
	run.summarize(snap, results, w, classes)
	var access *accessLog
	if routers != nil {
		access = routers.access()
	}
	run.servers(addrs, results, fig, access, maxWaiting, meanWaiting)
	if run.RouterCPUSeconds != nil && run.Sent > 0 {
		run.CPUMsPerRequest = ptr(*run.RouterCPUSeconds * 1000 / float64(run.Sent))
	}
	if len(fig.mape) > 0 {
		run.PredictorMAPE = fig.mape
	}
	if len(fig.fallbacks) > 0 {
		run.StageFallbacks = fig.fallbacks
	}
	run.DecisionWait, run.StageRoundTrips = fig.decisionWait, fig.stages
	run.flow(fig)
	return run, results, nil
}

func ptr[T any](v T) *T { return &v }
