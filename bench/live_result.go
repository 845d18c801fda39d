package bench

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"path/filepath"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// LiveResult is what RunLive measured; its JSON is bench live's.
type LiveResult struct {
	Scenario string `json:"scenario"`
	// Trace is the trace file's name (trace scenarios).
	Trace   string `json:"trace,omitempty"`
	Seed    uint64 `json:"seed"`
	Servers int    `json:"servers"`
	Preset  string `json:"preset"`
	// Disaggregation describes a prefill/decode fleet ("2 prefill + 2 decode, split adaptive");
	// "" for an aggregated one.
	Disaggregation string   `json:"disaggregation,omitempty"`
	Classes        []string `json:"classes,omitempty"`
	// Replicas describes a config's routers when there are several ("4 replicas sharing a state
	// plane"); "" for one. Their CPU and requests are summed, their figures the first one's.
	Replicas string `json:"replicas,omitempty"`
	// Requests is the number of arrivals every run replays; RateRPS the workload's mean rate over
	// the fleet after Speedup; SpanSeconds the time of the last one, and WindowRPS the rate those
	// arrivals have (Requests / SpanSeconds): a trace cut at --max-duration may be denser or
	// sparser there than over its whole length, which the load of a run depends on.
	Requests    int     `json:"requests"`
	Speedup     float64 `json:"speedup"`
	RateRPS     float64 `json:"rate_rps"`
	SpanSeconds float64 `json:"span_s"`
	WindowRPS   float64 `json:"window_rps"`
	// EngineCPU is the CPU the emulated servers burnt per token (--engine-cpu, auto resolved);
	// empty when they burnt none beyond serving HTTP.
	EngineCPU string `json:"engine_cpu,omitempty"`
	// Load is --load: the runs' rate is Load × Saturation's rate per server. 0 without --load.
	Load       float64         `json:"load,omitempty"`
	Saturation *LiveSaturation `json:"saturation,omitempty"`
	// Runs are the configs, then the baselines, in the order asked for.
	Runs []LiveRun `json:"runs"`
}

// LiveRun is one config's or baseline's figures. Latencies are as the client measured them,
// in ms, from the moment each request was sent.
type LiveRun struct {
	// Name is the config's file name, or client:round-robin / client:least-outstanding.
	Name   string `json:"name"`
	Config string `json:"config,omitempty"`
	Client string `json:"client,omitempty"`
	// Unavailable says why the run could not happen (its router did not start); nothing else
	// is set then.
	Unavailable string `json:"unavailable,omitempty"`
	// Killed names the server stopped mid-run and when (LiveOptions.KillPrefill); "" when none.
	Killed string `json:"killed,omitempty"`
	// Sent counts the requests sent, Skipped the arrivals not sent because MaxInFlight were in
	// flight; the sent ended OK, Shed (429), as Errors (other failures) or Cut by the drain.
	Sent    int `json:"sent"`
	Skipped int `json:"skipped"`
	OK      int `json:"ok"`
	Shed    int `json:"shed"`
	Errors  int `json:"errors"`
	Cut     int `json:"cut"`
	// TTFTMs, TPOTMs and E2EMs are over the OK requests (internal/quantile).
	TTFTMs stats.Percentiles3 `json:"ttft_ms"`
	TPOTMs stats.Percentiles3 `json:"tpot_ms"`
	E2EMs  stats.Percentiles3 `json:"e2e_ms"`
	// SLOAttainment is the share of requests with an objective, cut ones aside, that met all of
	// theirs (loadgen.Result.MetSLO); nil without objectives. ByClass splits it by --class.
	SLOAttainment *float64          `json:"slo_attainment"`
	ByClass       []ClassAttainment `json:"by_class,omitempty"`
	// FlowHeld counts the requests that waited in the router's flow control queue (dispatched
	// from it, or shed at its TTL or when their client left) and FlowHeldShare that over Sent;
	// FlowShed the requests flow control answered itself, by reason. Zero without flow control.
	FlowHeld      int            `json:"flow_held,omitempty"`
	FlowHeldShare float64        `json:"flow_held_share,omitempty"`
	FlowShed      map[string]int `json:"flow_shed,omitempty"`
	// GoodputRPS is the requests served within their objectives (all served ones when they had
	// none) per second, from the first arrival to the last answer (sim/stats.Summarize).
	GoodputRPS float64 `json:"goodput_rps"`
	// CachedShare is the usage blocks' cached prompt tokens over their prompt tokens.
	CachedShare *float64 `json:"cached_share"`
	// Direct are the figures of a shared fleet's other client (LiveOptions.Shared); the run's
	// own are the rest.
	Direct *DirectFigures `json:"direct,omitempty"`
	// Dispatches counts the requests the servers were sent: the router's
	// foresight_endpoint_requests_total over its endpoints (a failover counts each endpoint
	// tried), or the client's own count. ServerStats splits it, with each server's queue.
	Dispatches    int                `json:"dispatches"`
	ServerStats   []LiveServer       `json:"server_stats"`
	PredictorMAPE map[string]float64 `json:"predictor_mape,omitempty"`
	// StageFallbacks counts, for a router with plugin processes, the cycles where a stage's
	// fallback replaced its plugin's answer, by reason ("timeout": a missed deadline); empty
	// when none fell back.
	StageFallbacks map[string]float64 `json:"stage_fallbacks,omitempty"`
	// DecisionWait is how long the router's requests waited for their decision round to begin
	// (routers only).
	DecisionWait *DecisionWait `json:"decision_wait,omitempty"`
	// StageRoundTrips are the router's calls to each plugin instance (routers with plugin
	// processes or built-in stages that report durations).
	StageRoundTrips []StageRoundTrips `json:"stage_round_trips,omitempty"`
	// RouterPID is the router process's pid (stopped when the run ended).
	RouterPID int `json:"router_pid,omitempty"`
	// RouterCPUSeconds is the router process's user+system CPU time from ready to stop
	// (/proc/<pid>/stat), CPUMsPerRequest that over Sent; PluginsCPUSeconds its plugin
	// processes' (PluginProcesses of them). Routers only.
	RouterCPUSeconds  *float64 `json:"router_cpu_s,omitempty"`
	CPUMsPerRequest   *float64 `json:"cpu_ms_per_request,omitempty"`
	PluginsCPUSeconds *float64 `json:"plugins_cpu_s,omitempty"`
	PluginProcesses   int      `json:"plugin_processes,omitempty"`
	// EnginesCPUSeconds is the emulated servers' process's user+system CPU time over the replay
	// (/proc/<pid>/stat): their burn (--engine-cpu) and their HTTP serving; nil when they ran in
	// the bench's process (no --engine-cpu).
	EnginesCPUSeconds *float64 `json:"engines_cpu_s,omitempty"`
	// HostBusy is the share of all the host's CPUs busy over the replay (/proc/stat), whatever
	// ran on them: the router, the servers, the client, and anything else on the machine.
	HostBusy *float64 `json:"host_busy,omitempty"`
	// AddedTTFT is the TTFT the router added, from its access lines; nil without them.
	AddedTTFT *AddedTTFT `json:"added_ttft,omitempty"`
	// ObjectiveHeader says whether x-llm-d-inference-objective was sent (not to a router whose
	// config lacks the workload's objectives).
	ObjectiveHeader bool `json:"objective_header"`
	// SendLagMs is how late requests were sent after their arrival time; Arrivals a
	// fingerprint of the (ID, arrival) of every request sent: equal across runs that sent the
	// same arrivals.
	SendLagMs   stats.Percentiles3 `json:"send_lag_ms"`
	Arrivals    string             `json:"arrivals"`
	WallSeconds float64            `json:"wall_s"`
	outcomes    []stats.Outcome    // for the report
}

// ClassAttainment is one request class's figures: its SLO attainment, how many were shed (429),
// and the TTFT of those served.
type ClassAttainment struct {
	Name       string             `json:"name"`
	Sent       int                `json:"sent"`
	WithSLO    int                `json:"with_slo"`
	Met        int                `json:"met"`
	Attainment *float64           `json:"attainment"`
	Shed       int                `json:"shed"`
	TTFTMs     stats.Percentiles3 `json:"ttft_ms"`
	ttft       []float64
}

// newLiveResult heads the result of replaying w with o.
func newLiveResult(o LiveOptions, w *workload.Workload) *LiveResult {
	r := &LiveResult{Scenario: o.Scenario, Seed: o.Seed, Servers: o.Servers, Preset: o.Preset, Classes: o.Classes,
		Requests: len(w.Requests), Speedup: o.Speedup, RateRPS: w.Rate,
		SpanSeconds: w.Requests[len(w.Requests)-1].Arrival.Seconds()}
	if r.SpanSeconds > 0 {
		r.WindowRPS = float64(r.Requests) / r.SpanSeconds
	}
	r.Replicas = o.replicasText()
	if o.Trace != "" {
		r.Trace = filepath.Base(o.Trace)
	}
	if o.Prefill > 0 {
		r.Disaggregation = fmt.Sprintf("%d prefill + %d decode, split %s", o.Prefill, o.Decode, cmp.Or(o.Split, "as configured"))
	}
	return r
}

// summarize fills the run's outcome figures from the generator's final snapshot and the results.
func (r *LiveRun) summarize(snap loadgen.Snapshot, results []loadgen.Result, w *workload.Workload, classes []workload.Class) {
	s := &snap.Run
	r.Sent, r.Skipped = snap.Dispatched, snap.Skipped
	r.OK, r.Shed, r.Errors, r.Cut = s.Count(loadgen.OK), s.Count(loadgen.Shed), s.Errors(), s.Count(loadgen.Cut)
	p3 := func(p loadgen.Percentiles) stats.Percentiles3 {
		return stats.Percentiles3{P50: p.P50, P95: p.P95, P99: p.P99}
	}
	r.TTFTMs, r.TPOTMs, r.E2EMs = p3(s.TTFT), p3(s.TPOT), p3(s.E2E)
	if a, ok := s.Attainment(); ok {
		r.SLOAttainment = ptr(a)
	}
	if c, ok := s.PrefixHitRate(); ok {
		r.CachedShare = ptr(c)
	}
	slices.SortFunc(results, func(a, b loadgen.Result) int { return cmp.Compare(a.ID, b.ID) })
	h := fnv.New64a()
	lag := make([]float64, 0, len(results))
	byClass := map[string]*ClassAttainment{}
	for i := range results {
		res := &results[i]
		req := &w.Requests[res.ID]
		fmt.Fprintf(h, "%d@%d;", res.ID, req.Arrival)
		lag = append(lag, ms(max(res.Sent-req.Arrival, 0)))
		if len(classes) > 0 {
			name := cmp.Or(req.Class, "none")
			c := byClass[name]
			if c == nil {
				c = &ClassAttainment{Name: name}
				byClass[name] = c
			}
			c.Sent++
			if res.HasSLO() && res.Kind != loadgen.Cut {
				c.WithSLO++
				if res.MetSLO() {
					c.Met++
				}
			}
			switch res.Kind {
			case loadgen.OK:
				c.ttft = append(c.ttft, ms(res.TTFT))
			case loadgen.Shed:
				c.Shed++
			}
		}
		r.outcomes = append(r.outcomes, stats.Outcome{Arrival: req.Arrival, Shed: res.Kind != loadgen.OK,
			TTFT: res.TTFT, E2E: res.E2E, TPOTMs: ms(res.TPOT), OutputTokens: res.CompletionTokens,
			SLO: sdk.SLO{TTFTMs: res.SLO.TTFTMs, TPOTMs: res.SLO.TPOTMs}})
	}
	r.Arrivals = fmt.Sprintf("%016x", h.Sum64())
	slices.Sort(lag)
	if len(lag) > 0 {
		r.SendLagMs = stats.Of3(lag)
	}
	for _, name := range slices.Sorted(maps.Keys(byClass)) {
		c := byClass[name]
		if c.WithSLO > 0 {
			c.Attainment = ptr(float64(c.Met) / float64(c.WithSLO))
		}
		slices.Sort(c.ttft)
		c.TTFTMs = stats.Of3(c.ttft)
		r.ByClass = append(r.ByClass, *c)
	}
	r.GoodputRPS = stats.Summarize(r.outcomes).GoodputRPS
}

// flow fills the flow control figures from the router's metrics: a request waited in its queue
// when it was dispatched from it or left it at its TTL or with its client (the other reasons
// refuse it at the door, or concern the no-endpoints waiting room).
func (r *LiveRun) flow(fig routerFigures) {
	held := fig.flowDispatched + fig.flowShed["ttl-expired"] + fig.flowShed["client-gone"]
	r.FlowHeld = int(held)
	if r.Sent > 0 {
		r.FlowHeldShare = held / float64(r.Sent)
	}
	for reason, n := range fig.flowShed {
		if n > 0 {
			if r.FlowShed == nil {
				r.FlowShed = map[string]int{}
			}
			r.FlowShed[reason] = int(n)
		}
	}
}
