package bench

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/workload"
)

const (
	// DefaultLiveProbe is how long the arrivals of each saturation probe last (--probe).
	DefaultLiveProbe = 40 * time.Second
	// liveProbeDrain is how long a probe's requests may finish after its last arrival: only
	// the completions within the arrivals' span count, so the probe need not wait for the rest.
	liveProbeDrain = 2 * time.Second
	// liveProbeStep is the factor between two probes until one keeps up and one does not;
	// liveSaturationTolerance ends the search (each probe costs tens of seconds, so the bracket
	// is wider than the simulator's saturationTolerance).
	liveProbeStep           = 1.25
	liveSaturationTolerance = 1.05
	// saturationMixRequests is the number of the scenario's requests whose mix the simulator's
	// saturation is measured on when --requests does not say: bench routing's --requests 3000
	// of the ladder's figures.
	saturationMixRequests = 3000
)

// LiveSaturation is the rate the loads of bench live --load are fractions of: the highest rate
// per server at which the client sending round-robin, straight to the servers, keeps up with
// the workload on this host, the servers burning their --engine-cpu beside the client — the
// simulator's criterion (MeasureSaturation) on the live path, where the router's and the
// engines' CPU cost capacity that the simulator does not see.
type LiveSaturation struct {
	// PerServerRPS is the saturation rate per server, FleetRPS the fleet's.
	PerServerRPS float64 `json:"per_server_rps"`
	FleetRPS     float64 `json:"fleet_rps"`
	// Measured is false when --saturation gave the rate; the probes are then absent.
	Measured bool `json:"measured"`
	// SimulatedPerServerRPS is the simulator's saturation rate of the same fleet and request mix
	// (MeasureSaturation): the first rate probed, and the rate auto:SHARE's engine CPU cost is
	// worked out at. 0 when neither needed it.
	SimulatedPerServerRPS float64 `json:"simulated_per_server_rps,omitempty"`
	// UnstablePerServerRPS is the lowest rate probed that did not keep up.
	UnstablePerServerRPS float64 `json:"unstable_per_server_rps,omitempty"`
	// ProbeSeconds is each probe's span of arrivals; Probes are the probes in order.
	ProbeSeconds float64     `json:"probe_s,omitempty"`
	Probes       []LiveProbe `json:"probes,omitempty"`
	// WallSeconds is how long finding the rate took.
	WallSeconds float64 `json:"wall_s"`
}

// LiveProbe is one saturation probe: its rate, the arrivals in the second half of its span and
// the completions within that half, and whether they kept up (done ≥ keptUpShare × arrived).
type LiveProbe struct {
	PerServerRPS float64  `json:"per_server_rps"`
	Arrived      int      `json:"arrived"`
	Done         int      `json:"done"`
	KeptUp       bool     `json:"kept_up"`
	HostBusy     *float64 `json:"host_busy,omitempty"`
}

// liveLoad sets o.Rate from o.Load, when it is given: Load × the live saturation rate, given
// (o.Saturation) or measured (measureLiveSaturation), which it returns. The engines' CPU cost is
// then the same at every rate, the probes' and the runs': auto:SHARE's is worked out on the
// workload at the simulator's saturation rate (the servers burn SHARE of the CPUs there). Without
// o.Load it returns a nil saturation and the cost is the caller's to resolve on its workload.
func liveLoad(ctx context.Context, o *LiveOptions, engineCPU EngineCPU) (emulator.CPUCost, *LiveSaturation, error) {
	if o.Load == 0 {
		return emulator.CPUCost{}, nil, nil
	}
	cost, sim := engineCPU.Cost, 0.0
	if engineCPU.Share > 0 || o.Saturation == 0 {
		progress(o.Progress, "live: the simulator's saturation rate of the fleet…\n")
		var err error
		if sim, err = simulatedSaturation(*o); err != nil {
			return cost, nil, err
		}
		progress(o.Progress, "live: the simulator's saturation rate: %.3g req/s per server\n", sim)
	}
	if engineCPU.Share > 0 {
		at := *o
		at.Rate = sim
		w, _, err := liveWorkload(at)
		if err != nil {
			return cost, nil, err
		}
		cost = engineCPU.resolve(w)
	}
	sat := &LiveSaturation{PerServerRPS: o.Saturation, SimulatedPerServerRPS: sim}
	if o.Saturation == 0 {
		var err error
		if sat, err = measureLiveSaturation(ctx, *o, sim, cost, engineCPU.On); err != nil {
			return cost, nil, err
		}
	}
	sat.FleetRPS = sat.PerServerRPS * float64(o.Servers)
	o.Rate = o.Load * sat.PerServerRPS
	progress(o.Progress, "live: load %g × %.3g req/s per server: %.3g req/s per server\n", o.Load, sat.PerServerRPS, o.Rate)
	return cost, sat, nil
}

// simulatedSaturation is the simulator's saturation rate per server of o's fleet (its preset,
// servers and seed, bench routing's default noise) on the mix of o's scenario's first requests
// (--requests, or saturationMixRequests).
func simulatedSaturation(o LiveOptions) (float64, error) {
	fleet, err := simulatedFleet(o.Preset, o.Servers, DefaultNoise, o.Seed)
	if err != nil {
		return 0, err
	}
	w, err := workload.Scenario(o.Scenario, workload.Params{Servers: o.Servers, Requests: cmp.Or(o.Requests, saturationMixRequests),
		Seed: o.Seed, TracePath: o.Trace})
	if err != nil {
		return 0, err
	}
	sat, err := MeasureSaturation(fleet, w.Requests)
	if err != nil {
		return 0, err
	}
	return sat.PerServerRPS, nil
}

// measureLiveSaturation searches (searchRate, from the simulator's rate sim) for the highest
// rate per server at which the client's round-robin keeps up with o's workload live: each probe
// replays the workload generated at its rate for o.Probe of arrivals, against fresh servers
// burning cost, and keeps up when the completions within the second half of its span are at
// least keptUpShare of the arrivals in it.
func measureLiveSaturation(ctx context.Context, o LiveOptions, sim float64, cost emulator.CPUCost, engineCPU bool) (*LiveSaturation, error) {
	began := time.Now()
	sat := &LiveSaturation{Measured: true, SimulatedPerServerRPS: sim, ProbeSeconds: o.Probe.Seconds()}
	po := o
	po.Speedup, po.MaxDuration, po.Drain = 1, o.Probe, liveProbeDrain
	spec := liveRunSpec{name: "probe:" + BaselineRoundRobin, baseline: BaselineRoundRobin}
	lo, hi, _, err := searchRate(sim, liveProbeStep, liveSaturationTolerance, func(rate float64) (bool, error) {
		po.Rate = rate
		w, classes, err := liveWorkload(po)
		if err != nil {
			return false, err
		}
		run, results, err := runLive(ctx, po, spec, w, classes, cost, engineCPU)
		if err != nil {
			return false, err
		}
		p := LiveProbe{PerServerRPS: rate, HostBusy: run.HostBusy}
		p.Arrived, p.Done = secondHalf(w, results)
		p.KeptUp = p.Arrived > 0 && float64(p.Done) >= keptUpShare*float64(p.Arrived)
		sat.Probes = append(sat.Probes, p)
		verdict := "kept up"
		if !p.KeptUp {
			verdict = "fell behind"
		}
		progress(o.Progress, "live: saturation probe %d: %.3g req/s per server: %d done of %d arrived in the second half: %s\n",
			len(sat.Probes), rate, p.Done, p.Arrived, verdict)
		return p.KeptUp, ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("measuring the live saturation rate: %w", err)
	}
	sat.PerServerRPS, sat.FleetRPS, sat.UnstablePerServerRPS = lo, lo*float64(o.Servers), hi
	sat.WallSeconds = time.Since(began).Seconds()
	return sat, nil
}

// secondHalf counts the workload's arrivals after half its span and the requests that ended OK
// after half the span and by its end (sent + E2E, on the run's clock, which the arrivals share).
func secondHalf(w *workload.Workload, results []loadgen.Result) (arrived, done int) {
	end := w.Requests[len(w.Requests)-1].Arrival
	for i := range w.Requests {
		if w.Requests[i].Arrival > end/2 {
			arrived++
		}
	}
	for i := range results {
		r := &results[i]
		if f := r.Sent + r.E2E; r.Kind == loadgen.OK && f > end/2 && f <= end {
			done++
		}
	}
	return arrived, done
}
