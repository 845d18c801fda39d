package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// LadderOptions are bench routing's options with --load: the routing bench run at several
// fractions of the fleet's saturation rate.
type LadderOptions struct {
	RoutingOptions
	// Loads are the fractions of the saturation rate to run at (--load), each in (0, 2]: above
	// 1 the fleet is overloaded.
	Loads []float64
	// Saturation, when positive, is the saturation rate in fleet requests/s (--saturation),
	// used instead of measuring it.
	Saturation float64
}

// LadderResult is what RunLadder measured; its JSON is bench routing --load's.
type LadderResult struct {
	Saturation Saturation    `json:"saturation"`
	Loads      []Rung        `json:"loads"`
	Summary    []RungSummary `json:"summary"`
}

// Rung is the routing bench at one load.
type Rung struct {
	Load float64 `json:"load"`
	// RateFleet and RatePerServer are the arrival rate of the load, requests/s (for the
	// production ladder, its high stages' rate).
	RateFleet     float64        `json:"rate_fleet"`
	RatePerServer float64        `json:"rate_per_server"`
	Result        *RoutingResult `json:"result"`
}

// heuristicNames are the strategies the best heuristic is chosen among: all but the predictor and
// the oracle.
var heuristicNames = []string{"rr", "least-load", "load-prefix-111", "load-prefix-322"}

// RungSummary compares, at one load, the predicted-latency strategy and the oracle with the best
// heuristic, metric by metric. Metrics are keyed as ladderMetrics names them: ttft_p50_ms,
// ttft_p95_ms, ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, e2e_p50_ms, e2e_p95_ms, goodput_rps and,
// when requests had SLOs, slo_attainment.
type RungSummary struct {
	Load float64 `json:"load"`
	// BestHeuristic is, per metric, the heuristic with the best value (the first of
	// heuristicNames among equals); empty when no heuristic ran.
	BestHeuristic    map[string]Best `json:"best_heuristic"`
	PredictedLatency *Versus         `json:"predicted_latency,omitempty"`
	Oracle           *Versus         `json:"oracle,omitempty"`
}

// Best is the best heuristic on one metric and its value.
type Best struct {
	Strategy string  `json:"strategy"`
	Value    float64 `json:"value"`
}

// Versus is a strategy's values and, per metric, its difference from the best heuristic on that
// metric (VsBest, keyed by the metric's name with its unit: ttft_p50_pct, …, goodput_pct,
// slo_attainment_pts): in percent of the best heuristic's value ((x − best) / best × 100: a
// negative latency is faster, a positive goodput more), for SLO attainment in percentage points.
type Versus struct {
	Values map[string]float64 `json:"values"`
	VsBest map[string]float64 `json:"vs_best"`
}

// metric is one figure the ladder compares.
type metric struct {
	key, vs, column string
	value           func(*stats.Summary) (float64, bool)
	// key names the metric's value, vs its difference from the best heuristic's; higher is
	// better (goodput, SLO attainment); points differ in percentage points.
	higher, points bool
}

// ladderMetrics are the figures the ladder compares, in the order tables show them.
var ladderMetrics = []metric{
	{key: "ttft_p50_ms", vs: "ttft_p50_pct", column: "TTFT p50", value: func(s *stats.Summary) (float64, bool) { return s.TTFTMs.P50, true }},
	{key: "ttft_p95_ms", vs: "ttft_p95_pct", column: "p95", value: func(s *stats.Summary) (float64, bool) { return s.TTFTMs.P95, true }},
	{key: "ttft_p99_ms", vs: "ttft_p99_pct", column: "p99", value: func(s *stats.Summary) (float64, bool) { return s.TTFTMs.P99, true }},
	{key: "tpot_p50_ms", vs: "tpot_p50_pct", column: "TPOT p50", value: func(s *stats.Summary) (float64, bool) { return s.TPOTMs.P50, true }},
	{key: "tpot_p99_ms", vs: "tpot_p99_pct", column: "p99", value: func(s *stats.Summary) (float64, bool) { return s.TPOTMs.P99, true }},
	{key: "e2e_p50_ms", vs: "e2e_p50_pct", column: "E2E p50", value: func(s *stats.Summary) (float64, bool) { return s.E2EMs.P50, true }},
	{key: "e2e_p95_ms", vs: "e2e_p95_pct", column: "p95", value: func(s *stats.Summary) (float64, bool) { return s.E2EMs.P95, true }},
	{key: "slo_attainment", vs: "slo_attainment_pts", column: "SLO att.", higher: true, points: true, value: func(s *stats.Summary) (float64, bool) {
		if s.SLOAttainment == nil {
			return 0, false
		}
		return *s.SLOAttainment, true
	}},
	{key: "goodput_rps", vs: "goodput_pct", column: "goodput", higher: true, value: func(s *stats.Summary) (float64, bool) { return s.GoodputRPS, true }},
}

// validate checks the ladder's own options.
func (o LadderOptions) validate() error {
	if len(o.Loads) == 0 {
		return fmt.Errorf("--load needs at least one load, e.g. --load 0.5,0.7,0.85,0.95")
	}
	for _, l := range o.Loads {
		if !(l > 0 && l <= 2) {
			return fmt.Errorf("--load: every load must be in (0, 2] (a fraction of the saturation rate; above 1 overloads), got %v", l)
		}
	}
	if o.Rate != 0 {
		return fmt.Errorf("--load and --rate exclude each other: the ladder sets each load's rate from the saturation rate (give --saturation to fix that instead)")
	}
	if !(o.Saturation >= 0) || math.IsInf(o.Saturation, 0) {
		return fmt.Errorf("--saturation must be a finite rate > 0 in fleet requests/s, got %v", o.Saturation)
	}
	return nil
}

// RunLadder measures the fleet's saturation rate on the scenario's workload (MeasureSaturation;
// unless o.Saturation gives it; a disaggregated fleet's is measured as it serves, its decode
// and prefill decisions each round robin), then runs the routing bench at each load: steady Poisson
// scenarios are generated at load × saturation (what --rate would give, same requests at every
// load); the trace replays and the production ladder keep their requests and are time-scaled
// (workload.AtRate) so that their mean rate — production: its high stages' rate — is load ×
// saturation.
func RunLadder(ctx context.Context, o LadderOptions) (*LadderResult, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	base, err := routingWorkload(o.RoutingOptions)
	if err != nil {
		return nil, err
	}
	fleet, err := routingFleet(o.RoutingOptions)
	if err != nil {
		return nil, err
	}
	say := func(format string, args ...any) { // on a terminal only, as the progress bars
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	res := &LadderResult{Saturation: Saturation{FleetRPS: o.Saturation}}
	if o.Saturation == 0 {
		say("measuring the saturation rate (round-robin, bisection)…")
		if res.Saturation, err = MeasureSaturation(fleet, base.Requests); err != nil {
			return nil, err
		}
	}
	res.Saturation.PerServerRPS = res.Saturation.FleetRPS / float64(o.Servers)
	for _, load := range o.Loads {
		rate := load * res.Saturation.FleetRPS
		say("load %.2f: %.2f req/s fleet", load, rate)
		w, err := rungWorkload(o.RoutingOptions, base, rate)
		if err != nil {
			return nil, fmt.Errorf("load %v: %w", load, err)
		}
		r, err := runStrategies(ctx, o.RoutingOptions, fleet, w)
		if err != nil {
			return nil, fmt.Errorf("load %v: %w", load, err)
		}
		res.Loads = append(res.Loads, Rung{Load: load, RateFleet: rate, RatePerServer: rate / float64(o.Servers), Result: r})
		res.Summary = append(res.Summary, summarize(load, r))
	}
	return res, nil
}

// rungWorkload is the workload of the load whose rate is fleetRate: a steady Poisson scenario
// (one stage) generated at that rate, or base (a trace, no stage; the production ladder,
// several) time-scaled so that its rate — production: its highest stage's — is fleetRate.
func rungWorkload(o RoutingOptions, base *workload.Workload, fleetRate float64) (*workload.Workload, error) {
	if len(base.Stages) == 1 {
		o.Rate = fleetRate / float64(o.Servers)
		return routingWorkload(o)
	}
	target := fleetRate
	if len(base.Stages) > 1 {
		peak := slices.MaxFunc(base.Stages, func(a, b workload.Stage) int { return cmp.Compare(a.Rate, b.Rate) }).Rate
		target = fleetRate * base.Rate / peak
	}
	return base.AtRate(target)
}

// summarize compares predicted-latency and the oracle with the best heuristic on each metric at
// one load.
func summarize(load float64, r *RoutingResult) RungSummary {
	rs := RungSummary{Load: load, BestHeuristic: map[string]Best{}}
	for _, m := range ladderMetrics {
		for _, name := range heuristicNames {
			s := r.Strategies[name].Summary
			if s == nil {
				continue
			}
			v, ok := m.value(s)
			b, seen := rs.BestHeuristic[m.key]
			if ok && (!seen || (m.higher && v > b.Value) || (!m.higher && v < b.Value)) {
				rs.BestHeuristic[m.key] = Best{Strategy: name, Value: v}
			}
		}
	}
	rs.PredictedLatency = versus(r.Strategies["predicted-latency"].Summary, rs.BestHeuristic)
	rs.Oracle = versus(r.Strategies["oracle"].Summary, rs.BestHeuristic)
	return rs
}

// versus compares s with the best heuristics; nil when s did not run.
func versus(s *stats.Summary, best map[string]Best) *Versus {
	if s == nil {
		return nil
	}
	vs := &Versus{Values: map[string]float64{}, VsBest: map[string]float64{}}
	for _, m := range ladderMetrics {
		v, ok := m.value(s)
		if !ok {
			continue
		}
		vs.Values[m.key] = v
		b, ok := best[m.key]
		switch {
		case !ok:
		case m.points:
			vs.VsBest[m.vs] = 100 * (v - b.Value)
		case b.Value != 0:
			vs.VsBest[m.vs] = 100 * (v - b.Value) / b.Value
		}
	}
	return vs
}
