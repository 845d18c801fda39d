package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/host/proxy"
	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/rs/zerolog"
)

// PipelineOptions are what RunPipeline measures: bench pipeline's flags.
type PipelineOptions struct {
	// Config is the pipeline config's file.
	Config string
	// Endpoints per cycle, Cycles to run, both positive, and Concurrency (positive): the requests
	// waiting for a decision at once (clients in a closed loop), or with Cohorts the cycles in
	// flight at once.
	Endpoints, Cycles, Concurrency int
	// Round is the most cycles one round takes (see measureRounds); 0: what the router's decider
	// takes under a backlog at this fleet size (proxy.RoundLimit). Not with Cohorts.
	Round int
	// Cohorts decides each cycle with its own Pipeline.Run, Concurrency at once, instead of in
	// rounds: the bench before rounds, and the router for a scheduler that does not decide rounds.
	Cohorts bool
	// Pause is how long each client waits after its decision before it sends its next request
	// (not negative; 0: at once): with a pause the plugin processes idle between decisions, as they
	// do behind a router at low load, and each round trip starts cold.
	Pause time.Duration
	// Seed seeds the synthetic fleet.
	Seed uint64
	// FloorPlugin is the command serving NoopFilter, which the transport floor is measured
	// against: a binary and its arguments (foresight's own binary with its hidden noop-plugin
	// command).
	FloorPlugin []string
	// Log is the logger of the pipeline and its plugins; the zero value logs nothing.
	Log zerolog.Logger
	// AtExit, when set, registers each stop function of the plugin processes (see the package
	// documentation).
	AtExit func(func())
}

// Validate says what is wrong with the options' numbers, naming the flags.
func (o *PipelineOptions) Validate() error {
	switch {
	case o.Endpoints < 1 || o.Cycles < 1 || o.Concurrency < 1:
		return fmt.Errorf("--endpoints, --cycles and --concurrency must be positive")
	case o.Round < 0:
		return fmt.Errorf("--round must not be negative (0: the router's round at this fleet size), got %d", o.Round)
	case o.Pause < 0:
		return fmt.Errorf("--pause must not be negative, got %v", o.Pause)
	case o.Round > 0 && o.Cohorts:
		return fmt.Errorf("--round sizes rounds, which --cohorts does not decide: give one of them")
	}
	return nil
}

// PipelineResult is what RunPipeline measured; its JSON is bench pipeline's.
type PipelineResult struct {
	// Mode is "rounds" (Pipeline.RunRound, one round at a time) or "cohorts" (Pipeline.Run per
	// cycle, Concurrency at once).
	Mode        string `json:"mode"`
	Endpoints   int    `json:"endpoints"`
	Cycles      int    `json:"cycles"`
	Concurrency int    `json:"concurrency"`
	// PauseMs is each client's wait between its decision and its next request (--pause).
	PauseMs float64 `json:"pause_ms,omitempty"`
	// Round is the most cycles a round may take (--round, or the router's size: proxy.RoundLimit);
	// Rounds how many rounds the measured cycles took, and MeanRound their mean size (rounds mode
	// only).
	Round     int     `json:"round,omitempty"`
	Rounds    int     `json:"rounds,omitempty"`
	MeanRound float64 `json:"mean_round,omitempty"`
	// InFlight is how many rounds may be under way at once (proxy.RoundsInFlight; rounds mode).
	InFlight int `json:"rounds_in_flight,omitempty"`
	// Accounted is the share of the measured decisions whose picks accounted for the members of
	// their round before them (pipeline.RoundTrace.Accounted): those the router dispatches even on
	// an endpoint an earlier member took. Rounds mode only.
	Accounted     *float64 `json:"accounted_share,omitempty"`
	Stages        int      `json:"stages"`
	P50Us         float64  `json:"p50_us"`
	P99Us         float64  `json:"p99_us"`
	DecisionsPerS float64  `json:"decisions_per_s"`
	FloorP50Us    float64  `json:"floor_p50_us"`
	FloorP99Us    float64  `json:"floor_p99_us"`
	FloorPerS     float64  `json:"floor_cycles_per_s"`
	Fallbacks     int64    `json:"fallbacks"`
	MeanBatch     float64  `json:"mean_batch"`
	// CPU time per decision in the host and in the pipeline's plugin processes (Linux only).
	HostCPUUs    float64 `json:"host_cpu_us_per_decision,omitempty"`
	PluginsCPUUs float64 `json:"plugins_cpu_us_per_decision,omitempty"`
	PayloadBytes int     `json:"payload_bytes"`
	WallSeconds  float64 `json:"wall_s"`
	// FlowControl: the config enables flowControl, so each decision is the router's with it on
	// (decideWithFlow; in rounds, decisions.round): the saturation detector's call included. Saturated counts the measured
	// decisions it found no endpoint with room for (the router would have queued them).
	// DetectP50Us and DetectP99Us are the detector's call alone, within the decision.
	FlowControl bool    `json:"flow_control,omitempty"`
	Saturated   int64   `json:"saturated,omitempty"`
	DetectP50Us float64 `json:"detect_p50_us,omitempty"`
	DetectP99Us float64 `json:"detect_p99_us,omitempty"`
}

// RunPipeline runs synthetic cycles (with predictions when the config has no producer) through
// the configured pipeline, in rounds (measureRounds) or with Cohorts at the given concurrency;
// then, in the same run and the same way, the same number of cycles as sequential bare round
// trips to the no-op plugin carrying the same payload, one per stage: the transport floor. A
// round's floor sends its cycles in one batch call per stage (in passes of the pipeline's
// maxBatch, as RunRound does); a cohort's floor, one cycle per call. A producer is first taught
// the synthetic fleet until its first model serves. The pipeline's plugins and the floor's are
// stopped when it returns.
func RunPipeline(ctx context.Context, o PipelineOptions) (*PipelineResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(o.FloorPlugin) == 0 {
		return nil, errors.New("no command serves the floor's no-op plugin")
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return nil, err
	}
	p, err := pipeline.Build(ctx, cfg, o.Log)
	if err != nil {
		return nil, err
	}
	onExit(o.AtExit, p.Close)
	defer p.Close()
	pool := synthCycles(64, o.Endpoints, o.Seed, cfg.Pipeline.Producer == nil)
	if p.HasProducer() {
		if err := warmProducer(ctx, p, pool); err != nil {
			return nil, err
		}
	}
	res := &PipelineResult{Mode: "cohorts", Endpoints: o.Endpoints, Cycles: o.Cycles, Concurrency: o.Concurrency, PauseMs: ms(o.Pause),
		Stages: processStages(p), PayloadBytes: payloadSize(pool[0]), FlowControl: cfg.FlowControl.Enabled}
	d := &decisions{ctx: ctx, p: p, pool: pool, flow: res.FlowControl, detect: make([]time.Duration, o.Cycles)}
	drive := driver{n: o.Cycles, conc: o.Concurrency, maxBatch: cfg.Pipeline.MaxBatch, pause: o.Pause}
	if !o.Cohorts {
		res.Mode, drive.round = "rounds", cmp.Or(o.Round, proxy.RoundLimit(cfg.Server.DecisionConcurrency, o.Endpoints))
		drive.overlap = proxy.RoundsInFlight(cfg.Server.DecisionConcurrency)
		res.InFlight = drive.overlap
		res.Round = drive.round
	}
	drive.warm(d.one, d.round) // warm up connections, caches and the scheduler
	d.saturated.Store(0)
	d.accounted.Store(0)
	before := totals(p.Stats())
	host, plugins := newCPUMeter(os.Getpid()), newCPUMeter(pluginPIDs(p)...)
	lat, wall, rounds := drive.run(d.one, d.round)
	if used, ok := host.used(); ok {
		res.HostCPUUs = float64(used.Microseconds()) / float64(o.Cycles)
	}
	if used, ok := plugins.used(); ok && len(plugins.pids) > 0 {
		res.PluginsCPUUs = float64(used.Microseconds()) / float64(o.Cycles)
	}
	us := sortedMicros(lat)
	res.P50Us, res.P99Us = quantile.Sorted(us, 0.50), quantile.Sorted(us, 0.99)
	res.DecisionsPerS = float64(o.Cycles) / wall.Seconds()
	res.WallSeconds = wall.Seconds()
	res.Saturated = d.saturated.Load()
	if res.FlowControl {
		us := sortedMicros(d.detect)
		res.DetectP50Us, res.DetectP99Us = quantile.Sorted(us, 0.50), quantile.Sorted(us, 0.99)
	}
	if rounds > 0 {
		share := float64(d.accounted.Load()) / float64(o.Cycles)
		res.Rounds, res.MeanRound, res.Accounted = rounds, float64(o.Cycles)/float64(rounds), &share
	}
	after := totals(p.Stats())
	res.Fallbacks = after.Fallbacks - before.Fallbacks
	if b := after.Batches - before.Batches; b > 0 {
		res.MeanBatch = float64(after.Calls-before.Calls) / float64(b)
	}

	for _, c := range pool {
		transport.Seal(c) // the floor sends pre-encoded cycles: bare round trips
	}
	flat, fwall, err := measureFloor(ctx, o, drive, pool, max(res.Stages, 1))
	if err != nil {
		return nil, err
	}
	us = sortedMicros(flat)
	res.FloorP50Us, res.FloorP99Us = quantile.Sorted(us, 0.50), quantile.Sorted(us, 0.99)
	res.FloorPerS = float64(o.Cycles) / fwall.Seconds()
	return res, nil
}

// decideWithFlow makes c's decision as the router does with flow control on: a detector that
// judges by state alone before the pipeline, the pipeline then choosing among the endpoints with
// room; one that reads the predictions after it, on the candidates. It reports false when the
// pool was saturated for the request, which the router would then have queued (its ordering
// policy is called only then, and the queue's own work is a heap push: neither is measured here).
// took is the detector's call.
func decideWithFlow(ctx context.Context, p *pipeline.Pipeline, c *sdk.Cycle) (room bool, took time.Duration) {
	if !p.DetectsBefore(&c.Request) {
		return detectAfter(ctx, p, c, p.Run(ctx, c))
	}
	if room, took = detectBefore(ctx, p, c); room {
		p.Run(ctx, c)
	}
	return room, took
}

// detectBefore asks a detector that judges by state alone about c before its decision, keeping
// in c only the endpoints with room; false when none has.
func detectBefore(ctx context.Context, p *pipeline.Pipeline, c *sdk.Cycle) (room bool, took time.Duration) {
	v, st := p.Detect(ctx, c)
	c.Endpoints = pipeline.KeepRoom(slices.Clone(c.Endpoints), v.Room) // the pool's cycles are shared
	return len(c.Endpoints) > 0, st.Duration
}

// detectAfter asks a detector that reads the predictions about c's decision t, on its candidates.
func detectAfter(ctx context.Context, p *pipeline.Pipeline, c *sdk.Cycle, t *pipeline.Trace) (room bool, took time.Duration) {
	v, st := p.Detect(ctx, &sdk.Cycle{Request: c.Request, Endpoints: t.Candidates, Now: c.Now, Seed: c.Seed})
	return !v.Saturated(), st.Duration
}

// WriteText prints the result as bench pipeline's text.
func (r *PipelineResult) WriteText(out io.Writer) error {
	if r.Mode == "rounds" {
		fmt.Fprintf(out, "pipeline: %d cycles × %d endpoints, %d plugin stages, rounds of up to %d, %d under way at most, %d requests waiting (mean round %.2f), payload %d B\n",
			r.Cycles, r.Endpoints, r.Stages, r.Round, r.InFlight, r.Concurrency, r.MeanRound, r.PayloadBytes)
	} else {
		fmt.Fprintf(out, "pipeline: %d cycles × %d endpoints, %d plugin stages, cohorts of Run calls, concurrency %d, payload %d B\n",
			r.Cycles, r.Endpoints, r.Stages, r.Concurrency, r.PayloadBytes)
	}
	if r.PauseMs > 0 {
		fmt.Fprintf(out, "  pause     %.3f ms between a client's decision and its next request (the floor's too)\n", r.PauseMs)
	}
	fmt.Fprintf(out, "  decision  p50 %8.0f µs  p99 %8.0f µs  %8.0f decisions/s  fallbacks %d  mean batch %.2f\n", r.P50Us, r.P99Us, r.DecisionsPerS, r.Fallbacks, r.MeanBatch)
	if r.Accounted != nil {
		fmt.Fprintf(out, "  rounds    %d; %.1f %% of the picks accounted for their round's earlier members\n", r.Rounds, 100**r.Accounted)
	}
	if r.HostCPUUs > 0 {
		fmt.Fprintf(out, "  cpu       host %6.0f µs + plugins %6.0f µs per decision\n", r.HostCPUUs, r.PluginsCPUUs)
	}
	if r.FlowControl {
		fmt.Fprintf(out, "  flow      detector p50 %6.0f µs  p99 %6.0f µs within the decision; %d of %d decisions found no endpoint with room\n",
			r.DetectP50Us, r.DetectP99Us, r.Saturated, r.Cycles)
	}
	trips := fmt.Sprintf("%d sequential no-op round trips per cycle", max(r.Stages, 1))
	if r.Mode == "rounds" {
		trips = fmt.Sprintf("%d sequential no-op batch calls per round, its cycles in each", max(r.Stages, 1))
	}
	fmt.Fprintf(out, "  floor     p50 %8.0f µs  p99 %8.0f µs  %8.0f cycles/s  (%s)\n", r.FloorP50Us, r.FloorP99Us, r.FloorPerS, trips)
	if r.FloorP50Us > 0 && r.FloorPerS > 0 {
		fmt.Fprintf(out, "  vs floor  p50 %.2f×  decisions/s %.2f×\n", r.P50Us/r.FloorP50Us, r.DecisionsPerS/r.FloorPerS)
	}
	return nil
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

// measureFloor times trips sequential round trips to the no-op plugin per cycle, driven as the
// pipeline's cycles were: one cycle per call in cohorts; in rounds, a round's cycles in one
// batch call (per pass of at most maxBatch).
func measureFloor(ctx context.Context, o PipelineOptions, drive driver, pool []*sdk.Cycle, trips int) ([]time.Duration, time.Duration, error) {
	floor, err := pluginhost.Launch(ctx, pluginhost.Spec{Name: "floor", Type: NoopType, Stage: sdk.StageFilter,
		Path: o.FloorPlugin[0], Args: o.FloorPlugin[1:]}, o.Log)
	if err != nil {
		return nil, 0, err
	}
	onExit(o.AtExit, floor.Stop)
	defer floor.Stop()
	client := floor.Client().(transport.BatchFilter)
	var failed atomic.Pointer[error]
	roundTrips := func(batch []*sdk.Cycle) {
		for range trips {
			if _, err := client.FilterBatch(ctx, batch); err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
		}
	}
	one := func(i int) { roundTrips([]*sdk.Cycle{pool[i%len(pool)]}) }
	round := func(first, k int, _ pipeline.Prior) map[string]int {
		passes(first, k, drive.maxBatch, func(first, k int) {
			batch := make([]*sdk.Cycle, k)
			for j := range batch {
				batch[j] = pool[(first+j)%len(pool)]
			}
			roundTrips(batch)
		})
		return nil
	}
	drive.overlap = 1 // the floor: one round after the other
	drive.warm(one, round)
	lat, wall, _ := drive.run(one, round)
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

// processStages counts the pipeline's stages served by plugin processes (each a round trip of
// its own, unless fused with the filters beside it: see pipeline.StageTrace.Fused) that a decision
// calls.
func processStages(p *pipeline.Pipeline) int {
	n := 0
	for _, s := range p.Stats() {
		if s.Stage == sdk.StageOrder {
			continue // flow control's ordering policy: called for a request that queues, not a decision
		}
		for _, pl := range p.Plugins() {
			if pl.Name() == s.Plugin && !pl.Status().Builtin {
				n++
				break
			}
		}
	}
	return n
}

// pluginPIDs returns the pids of the pipeline's plugin processes, each once (instances of one
// multi-instance binary share theirs).
func pluginPIDs(p *pipeline.Pipeline) []int {
	var pids []int
	for _, pl := range p.Plugins() {
		if st := pl.Status(); st.PID != 0 {
			pids = append(pids, st.PID)
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}
