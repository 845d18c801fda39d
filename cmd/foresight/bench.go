package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/spf13/cobra"
)

func newBench() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmarks (pipeline, routing, predictor, proxy, faults)"}
	cmd.AddCommand(newBenchPipeline(), newBenchRouting(), newBenchPredictor(), newBenchProxy())
	cmd.AddCommand(newBenchFaults())
	return cmd
}

// pipelineResult is the JSON bench pipeline prints.
type pipelineResult struct {
	Endpoints     int     `json:"endpoints"`
	Cycles        int     `json:"cycles"`
	Concurrency   int     `json:"concurrency"`
	Stages        int     `json:"stages"`
	P50Us         float64 `json:"p50_us"`
	P99Us         float64 `json:"p99_us"`
	DecisionsPerS float64 `json:"decisions_per_s"`
	FloorP50Us    float64 `json:"floor_p50_us"`
	FloorP99Us    float64 `json:"floor_p99_us"`
	FloorPerS     float64 `json:"floor_cycles_per_s"`
	Fallbacks     int64   `json:"fallbacks"`
	MeanBatch     float64 `json:"mean_batch"`
	// CPU time per decision in the host and in the pipeline's plugin processes (Linux only).
	HostCPUUs    float64 `json:"host_cpu_us_per_decision,omitempty"`
	PluginsCPUUs float64 `json:"plugins_cpu_us_per_decision,omitempty"`
	PayloadBytes int     `json:"payload_bytes"`
	WallSeconds  float64 `json:"wall_s"`
}

func newBenchPipeline() *cobra.Command {
	var (
		file                    string
		endpoints, cycles, conc int
		seed                    uint64
		asJSON                  bool
		cpuProfile              string
	)
	cmd := &cobra.Command{
		Use:   "pipeline --config FILE",
		Short: "Measure decision latency and throughput of a pipeline against the transport floor",
		Long: "bench pipeline runs synthetic cycles (with predictions when the config has no producer)\n" +
			"through the configured pipeline at the given concurrency, then, in the same run and at the same\n" +
			"concurrency, the same number of cycles as sequential bare round trips to a no-op plugin\n" +
			"carrying the same payload, one per stage: the transport floor.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if endpoints < 1 || cycles < 1 || conc < 1 {
				return fmt.Errorf("--endpoints, --cycles and --concurrency must be positive")
			}
			ctx := context.Background()
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			cfg, err := config.Load(file)
			if err != nil {
				return err
			}
			res, err := benchPipeline(ctx, cfg, endpoints, cycles, conc, seed)
			if err != nil {
				return err
			}
			return printBench(cmd, res, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "config", "", "pipeline config (YAML)")
	f.IntVar(&endpoints, "endpoints", 100, "endpoints per cycle")
	f.IntVar(&cycles, "cycles", 20000, "cycles to run")
	f.IntVar(&conc, "concurrency", 8, "cycles in flight at once")
	f.Uint64Var(&seed, "seed", 1, "seed of the synthetic fleet")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the host's CPU profile to this file (go tool pprof)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// benchPipeline measures the pipeline of cfg on synthetic cycles, then the transport floor.
func benchPipeline(ctx context.Context, cfg *config.Config, endpoints, cycles, conc int, seed uint64) (pipelineResult, error) {
	p, err := pipeline.Build(ctx, cfg, logger())
	if err != nil {
		return pipelineResult{}, err
	}
	atExit(p.Close)
	pool := synthCycles(64, endpoints, seed, cfg.Pipeline.Producer == nil)
	if p.HasProducer() {
		if err := warmProducer(ctx, p, pool); err != nil {
			return pipelineResult{}, err
		}
	}
	res := pipelineResult{Endpoints: endpoints, Cycles: cycles, Concurrency: conc, Stages: processStages(p),
		PayloadBytes: payloadSize(pool[0])}

	run := func(i int) { c := *pool[i%len(pool)]; c.Seed = uint64(i); p.Run(ctx, &c) }
	measure(min(cycles, 500), conc, run) // warm up connections, caches and the scheduler
	before := totals(p.Stats())
	host, plugins := newCPUMeter(os.Getpid()), newCPUMeter(pluginPIDs(p)...)
	lat, wall := measure(cycles, conc, run)
	if used, ok := host.used(); ok {
		res.HostCPUUs = float64(used.Microseconds()) / float64(cycles)
	}
	if used, ok := plugins.used(); ok && len(plugins.pids) > 0 {
		res.PluginsCPUUs = float64(used.Microseconds()) / float64(cycles)
	}
	res.P50Us, res.P99Us = pct(lat, 0.50), pct(lat, 0.99)
	res.DecisionsPerS = float64(cycles) / wall.Seconds()
	res.WallSeconds = wall.Seconds()
	after := totals(p.Stats())
	res.Fallbacks = after.Fallbacks - before.Fallbacks
	if b := after.Batches - before.Batches; b > 0 {
		res.MeanBatch = float64(after.Calls-before.Calls) / float64(b)
	}

	for _, c := range pool {
		c.Seal() // the floor sends pre-encoded cycles: bare round trips
	}
	flat, fwall, err := measureFloor(ctx, pool, cycles, conc, max(res.Stages, 1))
	if err != nil {
		return res, err
	}
	res.FloorP50Us, res.FloorP99Us = pct(flat, 0.50), pct(flat, 0.99)
	res.FloorPerS = float64(cycles) / fwall.Seconds()
	return res, nil
}

// warmProducer teaches the producer the synthetic fleet's latencies and waits until its first
// model is in service, so that the bench measures decisions made with predictions.
func warmProducer(ctx context.Context, p *pipeline.Pipeline, pool []*sdk.Cycle) error {
	samples := synthSamples(pool, 2000)
	for i := 0; i < len(samples); i += feedback.DefaultMaxBatch {
		if _, err := p.Observe(ctx, samples[i:min(i+feedback.DefaultMaxBatch, len(samples))]); err != nil {
			return fmt.Errorf("warming the producer up: %w", err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := p.Observe(ctx, nil)
		switch {
		case err != nil:
			return fmt.Errorf("warming the producer up: %w", err)
		case res.Stats != nil && res.Stats.ModelVersion > 0:
			return nil
		case time.Now().After(deadline):
			return errors.New("warming the producer up: no model after 30 s of training")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// measureFloor times, per cycle, trips sequential round trips of the cycle to a no-op plugin.
func measureFloor(ctx context.Context, pool []*sdk.Cycle, cycles, conc, trips int) ([]time.Duration, time.Duration, error) {
	floor, err := newFloor(ctx)
	if err != nil {
		return nil, 0, err
	}
	atExit(floor.Stop)
	client := floor.Client().(sdk.BatchFilter)
	var failed atomic.Pointer[error]
	roundTrips := func(i int) {
		batch := []*sdk.Cycle{pool[i%len(pool)]}
		for range trips {
			if _, err := client.FilterBatch(ctx, batch); err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
		}
	}
	measure(min(cycles, 500), conc, roundTrips)
	lat, wall := measure(cycles, conc, roundTrips)
	if err := failed.Load(); err != nil {
		return nil, 0, fmt.Errorf("floor round trip failed: %w", *err)
	}
	return lat, wall, nil
}

// totals sums the stats of every slot.
func totals(stats []pipeline.Stats) pipeline.Stats {
	var t pipeline.Stats
	for _, s := range stats {
		t.Calls, t.Fallbacks, t.Batches = t.Calls+s.Calls, t.Fallbacks+s.Fallbacks, t.Batches+s.Batches
	}
	return t
}

// measure runs n calls of fn over conc workers and returns each call's latency and the wall time.
func measure(n, conc int, fn func(i int)) ([]time.Duration, time.Duration) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				t := time.Now()
				fn(i)
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	return lat, time.Since(began)
}

// pct returns the q-quantile of lat in microseconds (internal/quantile); 0 for no latencies.
func pct(lat []time.Duration, q float64) float64 {
	us := make([]float64, len(lat))
	for i, d := range lat {
		us[i] = float64(d.Nanoseconds()) / 1000
	}
	slices.Sort(us)
	return quantile.Sorted(us, q)
}

// processStages counts the pipeline's stages served by plugin processes (each a round trip).
func processStages(p *pipeline.Pipeline) int {
	n := 0
	for _, s := range p.Stats() {
		for _, pl := range p.Plugins() {
			if pl.Name() == s.Plugin && !pl.Status().Builtin {
				n++
				break
			}
		}
	}
	return n
}

// pluginPIDs returns the pids of the pipeline's plugin processes.
func pluginPIDs(p *pipeline.Pipeline) []int {
	var pids []int
	for _, pl := range p.Plugins() {
		if st := pl.Status(); st.PID != 0 {
			pids = append(pids, st.PID)
		}
	}
	return pids
}

// newFloor launches this binary as the no-op filter plugin.
func newFloor(ctx context.Context) (*pluginhost.Plugin, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary for the floor plugin: %w", err)
	}
	return pluginhost.Launch(ctx, pluginhost.Spec{Name: "floor", Type: noopType, Stage: sdk.StageFilter,
		Path: self, Args: []string{"noop-plugin"}}, logger())
}

func printBench(cmd *cobra.Command, r pipelineResult, asJSON bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		return printJSON(out, r)
	}
	fmt.Fprintf(out, "pipeline: %d cycles × %d endpoints, %d plugin stages, concurrency %d, payload %d B\n",
		r.Cycles, r.Endpoints, r.Stages, r.Concurrency, r.PayloadBytes)
	fmt.Fprintf(out, "  decision  p50 %8.0f µs  p99 %8.0f µs  %8.0f decisions/s  fallbacks %d  mean batch %.2f\n", r.P50Us, r.P99Us, r.DecisionsPerS, r.Fallbacks, r.MeanBatch)
	if r.HostCPUUs > 0 {
		fmt.Fprintf(out, "  cpu       host %6.0f µs + plugins %6.0f µs per decision\n", r.HostCPUUs, r.PluginsCPUUs)
	}
	fmt.Fprintf(out, "  floor     p50 %8.0f µs  p99 %8.0f µs  (%d sequential no-op round trips per cycle)\n", r.FloorP50Us, r.FloorP99Us, max(r.Stages, 1))
	return nil
}

// runBench runs bench under a CPU profile of this process (when profile names a file) and prints
// its result: one JSON object when asJSON, else through text.
func runBench[T any](out io.Writer, profile string, asJSON bool, bench func() (T, error), text func(io.Writer, T) error) error {
	stop, err := startCPUProfile(profile)
	if err != nil {
		return err
	}
	defer stop()
	res, err := bench()
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(out, res)
	}
	return text(out, res)
}

// startCPUProfile starts profiling this process into file and returns the function that stops it;
// with no file it profiles nothing.
func startCPUProfile(file string) (func(), error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
