package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/rs/zerolog"
)

// MatrixOptions are bench routing --matrix's options.
type MatrixOptions struct {
	// Matrix names the matrix; "admission" is the one there is.
	Matrix string
	// Examples is the directory of the example pipelines; the matrix's own are in its admission/.
	Examples string
	// Preset is the engine preset, Servers the fleet size, Noise the engines' step-time noise.
	Preset  string
	Servers int
	Noise   float64
	// Requests is the number of requests of each run (0: DefaultMatrixRequests).
	Requests int
	// Seed is the first seed; the runs use Seeds seeds from it (0: DefaultMatrixSeeds).
	Seed  uint64
	Seeds int
	// Load is the arrival rate as a fraction of the saturation rate (0: DefaultMatrixLoad);
	// Saturation, when positive, is that rate in fleet requests/s instead of measuring it.
	Load, Saturation float64
	// Classes replace the matrix's request classes (NAME:WEIGHT[:ttft=MS]…, as --class).
	Classes []string
	// Progress, Log and AtExit are as in RoutingOptions.
	Progress io.Writer
	Log      zerolog.Logger
	AtExit   func(func())
}

// The admission matrix's defaults, sized for a two-core machine (a full run in a few minutes).
const (
	// DefaultMatrixRequests per run: about 5 s of arrivals at the default load on 8 servers, the
	// fleet falling behind all along, so that a config that admits everything meets a queue that
	// keeps growing. Seed 004's reviewers asked for 2,000 or more per seed, so that a p99 rests on
	// some 20 observations rather than 2; a class here has over 3,000.
	DefaultMatrixRequests = 10_000
	// DefaultMatrixSeeds is the study's 3 seeds.
	DefaultMatrixSeeds = 3
	// DefaultMatrixLoad overloads the fleet by a fifth: it can serve at most 1/1.2 ≈ 83 % of the
	// arrivals, so something must be shed or queue, yet a third of the arrivals are critical and a
	// third standard, so an admitter that shed only sheddable requests could still serve every
	// critical and standard one.
	DefaultMatrixLoad = 1.2
)

// admissionWorkload is the matrix's workload, shaped after seed 004's physics: a shared 512-token
// system prompt per group (its "512-token prefix match") and a question of about 256 tokens,
// which puts a cached prefill near its 11 ms floor and an uncached one near its 20 ms. Six groups
// of 1000 users each, single turn. Two requests in three are one-off: a prompt of the same
// lengths that shares nothing, as H14-2 assumes ("~33 % [cache hits] for uniform admission"), so
// that the hit share among admitted requests can differ from the arriving one; the third that
// visits the groups' 6,000 users repeats no prompt in a run of 10,000. The output length,
// 32 ± 10, is ours (the seed gives none) and short on purpose: a simulated server runs up to 1024
// sequences at once, so with long answers an overload first stretches TPOT and reaches TTFT, the
// objective the study gates on, only after tens of thousands of requests; with short ones the
// prefill budget of each step is what saturates, and waiting requests queue for their first token
// within a run of a few thousand.
var admissionWorkload = workload.SharedPrefixConfig{NumGroups: 6, PromptsPerGroup: 1000, SystemPromptLen: 512,
	Question: workload.Spread(256, 77), Output: workload.Spread(32, 10), RatePerServer: 10, OneOffShare: 2.0 / 3}

// newGroupArrival is the fairness rows' new tenant: from mid-run on, a seventh group takes a
// seventh of the requests that visit a group, the share each of the six had.
var newGroupArrival = workload.NewGroup{From: 0.5, Share: 1.0 / 7}

// admissionClasses are the orthogonal mixed-SLO classes (drawn independently of the prefix
// group): seed 004's three, in equal shares (its H14-2 assumes "equal SLO fractions"), with its
// budgets as TTFT objectives: critical 200 ms (never shed: priority 0), standard 500 ms
// (priority −1), sheddable 300 ms (priority −2) — the admitter's budgetsMs defaults.
var admissionClasses = []string{"critical:1:ttft=200:priority=0", "standard:1:ttft=500:priority=-1", "sheddable:1:ttft=300:priority=-2"}

// matrixConfig is one row of the matrix: a pipeline config and the workload it runs on.
type matrixConfig struct {
	name, file, what string
	newGroup         bool
}

// admissionConfigs are seed 004's isolation matrix (its configs 1–5 are (a)–(e)), then the
// fairness rows: (c) without and with the prefix group floor (0.5, a guard against starvation,
// and 0.98, which binds), on the workload where a new group arrives mid-run. The seed's configs 2
// and 3 also ran a priority scheduler in the engine; the simulated engines schedule first come,
// first served, so here the classes differ only at admission.
var admissionConfigs = []matrixConfig{
	{name: "a-always-admit", file: "load-prefix-322.yaml", what: "always admit; queue 3, KV 2, prefix 2"},
	{name: "b-queue-depth", file: "admission/queue-depth.yaml", what: "queue-depth admission; prefix 4, queue 3"},
	{name: "c-budget", file: "admission/budget.yaml", what: "predictive budget admission; prefix 4, queue 3"},
	{name: "d-predictive-only", file: "admission/predictive-only.yaml", what: "predictive budget admission; queue 3, KV 2, prefix 2"},
	{name: "e-round-robin", file: "round-robin.yaml", what: "always admit; round-robin"},
	{name: "c-budget", file: "admission/budget.yaml", what: "(c), a new group arrives mid-run", newGroup: true},
	{name: "c-budget-floor", file: "admission/budget-floor.yaml", what: "(c) with a prefix group floor of 0.5, a new group arrives mid-run", newGroup: true},
	{name: "c-budget-floor-98", file: "admission/budget-floor-98.yaml", what: "(c) with a prefix group floor of 0.98, a new group arrives mid-run", newGroup: true},
}

// RunMatrix runs the named matrix (o.Matrix: "admission"): it measures the fleet's saturation rate
// on the matrix's workload (MeasureSaturation; unless o.Saturation gives it), then runs every
// config of the matrix once per seed on the workload generated at o.Load × that rate, through
// the real host pipeline, and aggregates per config and class (see MatrixRow). Everything it
// returns is a function of the options: the same options give the same JSON, byte for byte.
func RunMatrix(ctx context.Context, o MatrixOptions) (*MatrixResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	classes, err := workload.ParseClasses(o.Classes)
	if err != nil {
		return nil, err
	}
	res := &MatrixResult{Matrix: o.Matrix, Servers: o.Servers, Preset: o.Preset, Requests: o.Requests, Load: o.Load,
		Workload: describeWorkload(), NewGroup: newGroupArrival}
	for i := range o.Seeds {
		res.Seeds = append(res.Seeds, o.Seed+uint64(i))
	}
	for _, c := range classes {
		res.Classes = append(res.Classes, MatrixClass{Name: c.Name, Weight: c.Weight, Priority: c.Priority, TTFTSLOMs: c.SLO.TTFTMs, TPOTSLOMs: c.SLO.TPOTMs})
	}
	say := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	res.SaturationRPS, res.SaturationMeasured = o.Saturation, o.Saturation == 0
	if o.Saturation == 0 {
		say("measuring the saturation rate (round-robin, bisection)…")
		if res.SaturationRPS, err = matrixSaturation(o, classes); err != nil {
			return nil, err
		}
	}
	res.RateFleet = o.Load * res.SaturationRPS
	began, meter := time.Now(), newCPUMeter(os.Getpid())
	for _, mc := range admissionConfigs {
		var runs []matrixRun
		for _, seed := range res.Seeds {
			say("%s (%s), seed %d", mc.name, mc.what, seed)
			run, err := runMatrixConfig(ctx, o, mc, classes, seed, res.RateFleet)
			if err != nil {
				return nil, fmt.Errorf("%s, seed %d: %w", mc.name, seed, err)
			}
			runs = append(runs, run)
		}
		res.Rows = append(res.Rows, aggregate(mc, classes, runs))
	}
	res.wall = time.Since(began)
	res.cpu, res.cpuOK = meter.used()
	return res, nil
}

// matrixSaturation measures the saturation rate of o's fleet on the matrix's workload (seed
// o.Seed) with MeasureSaturation. Round-robin hands each server every n-th request, so a fleet of
// n identical servers saturates at n times the rate one server does on the same mix: for a fleet
// of one preset it measures one server and multiplies, which takes an n-th of the simulation (a
// mixed fleet is measured whole).
func matrixSaturation(o MatrixOptions, classes []workload.Class) (float64, error) {
	base, err := matrixWorkload(o, classes, o.Seed, 0, false)
	if err != nil {
		return 0, err
	}
	servers, scale := o.Servers, 1.0
	if !strings.Contains(o.Preset, ",") && !strings.Contains(o.Preset, "@") {
		servers, scale = 1, float64(o.Servers)
	}
	fleet, err := simulatedFleet(o.Preset, servers, o.Noise, o.Seed)
	if err != nil {
		return 0, err
	}
	sat, err := MeasureSaturation(fleet, base.Requests)
	if err != nil {
		return 0, err
	}
	return sat.FleetRPS * scale, nil
}

// defaults fills o's zero values and checks the rest.
func (o *MatrixOptions) defaults() error {
	if o.Matrix != "admission" {
		return fmt.Errorf("--matrix %q: the one matrix is admission", o.Matrix)
	}
	o.Requests = cmp.Or(o.Requests, DefaultMatrixRequests)
	o.Seeds = cmp.Or(o.Seeds, DefaultMatrixSeeds)
	o.Load = cmp.Or(o.Load, DefaultMatrixLoad)
	if len(o.Classes) == 0 {
		o.Classes = admissionClasses
	}
	switch {
	case o.Servers < 1:
		return fmt.Errorf("--servers must be at least 1, got %d", o.Servers)
	case o.Requests < 20:
		return fmt.Errorf("--requests must be at least 20 for a matrix run, got %d", o.Requests)
	case o.Seeds < 2 || o.Seeds > len(t975)+1:
		return fmt.Errorf("the matrix needs 2 to %d seeds (an interval across seeds needs two), got %d", len(t975)+1, o.Seeds)
	case !(o.Load > 0 && o.Load <= 2):
		return fmt.Errorf("--load must be one fraction of the saturation rate in (0, 2] with --matrix, got %v", o.Load)
	case !(o.Saturation >= 0):
		return fmt.Errorf("--saturation must be a rate > 0 in fleet requests/s, got %v", o.Saturation)
	}
	return nil
}

// matrixWorkload generates the matrix's workload for seed at fleetRate requests/s (0: any rate,
// for measuring saturation), with the new group when newGroup is set.
func matrixWorkload(o MatrixOptions, classes []workload.Class, seed uint64, fleetRate float64, newGroup bool) (*workload.Workload, error) {
	p := workload.Params{Servers: o.Servers, RatePerServer: fleetRate / float64(o.Servers), Requests: o.Requests,
		Seed: seed, Classes: classes}
	if newGroup {
		g := newGroupArrival
		p.NewGroup = &g
	}
	return workload.SharedPrefix("admission", admissionWorkload, p)
}

// runMatrixConfig runs one config on one seed's workload and returns what each request met.
func runMatrixConfig(ctx context.Context, o MatrixOptions, mc matrixConfig, classes []workload.Class, seed uint64, fleetRate float64) (matrixRun, error) {
	w, err := matrixWorkload(o, classes, seed, fleetRate, mc.newGroup)
	if err != nil {
		return matrixRun{}, err
	}
	fleet, err := simulatedFleet(o.Preset, o.Servers, o.Noise, seed)
	if err != nil {
		return matrixRun{}, err
	}
	// A config file runs as the routing bench runs one (newStrategy): a producer trains inline and
	// starts cold, and the stage deadline is long enough that a busy machine never routes by
	// fallbacks, so that two runs of one seed are the same.
	st, err := newStrategy(ctx, filepath.Join(o.Examples, mc.file), RoutingOptions{Log: o.Log, AtExit: o.AtExit}, nil)
	if err != nil {
		return matrixRun{}, err
	}
	defer st.close()
	rec := &arrivalRecorder{router: st.router}
	bar := newProgress(o.Progress, len(w.Requests), mc.name)
	fleet.Progress = func() { _ = bar.Add(1) }
	run, err := cluster.Run(fleet, w.Requests, rec, st.observe)
	_ = bar.Finish()
	if st.samples != nil {
		st.samples.Flush(ctx)
	}
	if err != nil {
		return matrixRun{}, err
	}
	mr := matrixRun{requests: w.Requests, outcomes: run.Outcomes, bestMatch: rec.bestMatch, newGroupFrom: len(w.Requests)}
	if mc.newGroup {
		mr.newGroup = admissionWorkload.NumGroups + 1 // the workload numbers it after the others
		mr.newGroupFrom = newGroupStart(w, mr.newGroup)
	}
	return mr, nil
}

// arrivalRecorder routes with router and notes, per request (the cluster routes them one at a
// time, in arrival order), the best prefix match any endpoint offered it at arrival: whether the
// router's prefix index held some of its prompt anywhere, whatever the admitter then decided.
type arrivalRecorder struct {
	router    cluster.Router
	bestMatch []float64
}

// Route records c's best prefix match and routes c.
func (r *arrivalRecorder) Route(c *sdk.Cycle, f *cluster.Fleet) (cluster.Decision, error) {
	best := 0.0
	for i := range c.Endpoints {
		best = max(best, c.Endpoints[i].State.PrefixMatch)
	}
	r.bestMatch = append(r.bestMatch, best)
	return r.router.Route(c, f)
}

// newGroupStart is the index of w's first request of group g (len(w.Requests) when none).
func newGroupStart(w *workload.Workload, g int) int {
	for i := range w.Requests {
		if w.Requests[i].Group == g {
			return i
		}
	}
	return len(w.Requests)
}
