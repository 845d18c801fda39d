package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/internal/splitmix"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/foresight-router/foresight/sim/workload"
)

// Saturation is the fleet's saturation rate: the highest arrival rate at which round-robin
// keeps up with the workload, which the load ladder's loads are fractions of.
type Saturation struct {
	// FleetRPS is the rate in requests/s for the whole fleet, PerServerRPS the same per server.
	FleetRPS     float64 `json:"fleet_rps"`
	PerServerRPS float64 `json:"per_server_rps"`
	// Measured is false when the rate was given (--saturation); the fields below are then zero.
	Measured bool `json:"measured"`
	// Requests are the requests of each measuring run: Copies copies of the workload.
	Requests int `json:"requests,omitempty"`
	Copies   int `json:"copies,omitempty"`
	// Runs is the number of round-robin runs the search took; Unstable the lowest rate it found
	// round-robin falling behind at (fleet requests/s): the saturation rate is within
	// saturationTolerance below it.
	Runs     int     `json:"runs,omitempty"`
	Unstable float64 `json:"unstable_fleet_rps,omitempty"`
	// WallSeconds is how long the measurement took.
	WallSeconds float64 `json:"wall_s"`
}

const (
	// runDepth is how many times its estimated concurrency each server gets in a measuring run:
	// enough for the run's second half to last several service times.
	runDepth = 8
	// keptUpShare is the criterion of a run that keeps up: over the second half of the arrival
	// span, completions are at least this share of arrivals. A fleet of capacity c fed at rate
	// r > c completes about c/r of the arrivals, so a run at up to c/keptUpShare may pass.
	keptUpShare = 0.95
	// saturationTolerance ends the search when the unstable rate is within this factor of the
	// stable one.
	saturationTolerance = 1.03
	// maxSaturationRuns bounds the search: enough to double or halve the first guess 30 times
	// and then narrow the bracket.
	maxSaturationRuns = 40
)

// MeasureSaturation measures the saturation rate of fleet on the workload mix of reqs: the
// highest rate at which round-robin (the simplest router, and none of the ones compared) keeps
// up with the requests arriving evenly spaced, found by bisection. The requests are
// copiesFor(fleet, reqs) copies of reqs (sharing nothing between copies) in their order; a run
// keeps up when, over the second half of its arrival span, completions are at least keptUpShare
// of arrivals. The first rate tried is the completion rate of one copy arriving all at once;
// from there the rate doubles or halves until a run keeps up and one does not, and the bracket
// is halved (geometrically) until it is saturationTolerance wide; the saturation rate is its
// lower end. A deterministic simulator runs every step: the same inputs give the same rate.
func MeasureSaturation(fleet cluster.Config, reqs []workload.Request) (Saturation, error) {
	began := time.Now()
	if len(reqs) == 0 || len(fleet.Engines) == 0 {
		return Saturation{}, fmt.Errorf("measuring saturation needs requests and servers, got %d and %d", len(reqs), len(fleet.Engines))
	}
	fleet.Progress = nil
	tiled, copies := copiesFor(fleet, reqs)
	sat := Saturation{Measured: true, Requests: len(tiled), Copies: copies}
	guess, err := burstRate(fleet, tiled[:len(reqs)])
	if err != nil {
		return Saturation{}, err
	}
	lo, hi, runs, err := searchRate(guess, 2, saturationTolerance, func(r float64) (bool, error) {
		return keepsUp(fleet, tiled, r)
	})
	sat.Runs = runs
	if err != nil {
		return Saturation{}, fmt.Errorf("measuring saturation: %w", err)
	}
	sat.FleetRPS, sat.PerServerRPS, sat.Unstable = lo, lo/float64(len(fleet.Engines)), hi
	sat.WallSeconds = time.Since(began).Seconds()
	return sat, nil
}

// searchRate finds, from the first rate guess, the highest rate keepsUp says yes to: the rate
// is multiplied (or divided) by step until one rate passes and one fails, then the bracket is
// halved geometrically until its ends are within tolerance of each other. It returns the
// bracket (lo kept up, hi not) and the number of rates tried, at most maxSaturationRuns.
func searchRate(guess, step, tolerance float64, keepsUp func(rate float64) (bool, error)) (lo, hi float64, runs int, err error) {
	for r := guess; lo == 0 || hi == 0 || hi > lo*tolerance; {
		if runs == maxSaturationRuns {
			return 0, 0, runs, fmt.Errorf("no bracket after %d runs (kept up at %v, not at %v req/s)", runs, lo, hi)
		}
		ok, err := keepsUp(r)
		runs++
		if err != nil {
			return 0, 0, runs, err
		}
		if ok {
			lo = r
		} else {
			hi = r
		}
		switch {
		case hi == 0:
			r *= step
		case lo == 0:
			r /= step
		default:
			r = math.Sqrt(lo * hi)
		}
	}
	return lo, hi, runs, nil
}

// keepsUp runs reqs through fleet with round-robin, arriving evenly spaced at rate (fleet
// requests/s), and reports whether completions over the second half of the arrival span are at
// least keptUpShare of the arrivals in it.
func keepsUp(fleet cluster.Config, reqs []workload.Request, rate float64) (bool, error) {
	reqs = slices.Clone(reqs)
	for i := range reqs {
		reqs[i].Arrival = time.Duration(float64(i) / rate * float64(time.Second))
	}
	end := reqs[len(reqs)-1].Arrival
	run, err := cluster.Run(fleet, reqs, &roundRobin{}, nil)
	if err != nil {
		return false, fmt.Errorf("at %.3g req/s: %w", rate, err)
	}
	arrived, done := 0, 0
	for _, o := range run.Outcomes {
		if o.Arrival > end/2 {
			arrived++
		}
		if f := o.Arrival + o.E2E; !o.Shed && f > end/2 && f <= end {
			done++
		}
	}
	return float64(done) >= keptUpShare*float64(arrived), nil
}

// burstRate is a first guess of the saturation rate: the completion rate of reqs all arriving
// at time zero, between the 20th and 80th percentiles of their finish times. It errs either way
// (the first completions are the short requests; the batch family congests), which the search
// corrects.
func burstRate(fleet cluster.Config, reqs []workload.Request) (float64, error) {
	reqs = slices.Clone(reqs)
	for i := range reqs {
		reqs[i].Arrival = 0
	}
	run, err := cluster.Run(fleet, reqs, &roundRobin{}, nil)
	if err != nil {
		return 0, fmt.Errorf("measuring saturation: %w", err)
	}
	finish := make([]time.Duration, 0, len(reqs))
	for _, o := range run.Outcomes {
		if !o.Shed {
			finish = append(finish, o.Arrival+o.E2E)
		}
	}
	slices.Sort(finish)
	lo, hi := len(finish)/5, len(finish)*4/5
	if hi <= lo || finish[hi] <= finish[lo] {
		return 1, nil // too few to tell: any start will do
	}
	return float64(hi-lo) / (finish[hi] - finish[lo]).Seconds(), nil
}

// copiesFor returns whole copies of reqs, at least runDepth times the fleet's estimated
// concurrency in all, in order, and their number. Copy c > 0 has its block hashes (and session
// IDs) remapped, so that each copy shares prefixes within itself exactly as reqs do but nothing
// with another: repeating a prompt verbatim would hit a cache no real workload would.
func copiesFor(fleet cluster.Config, reqs []workload.Request) ([]workload.Request, int) {
	want := 0
	for _, ec := range fleet.Engines {
		want += runDepth * concurrency(ec, reqs)
	}
	copies := max(1, (want+len(reqs)-1)/len(reqs))
	out := make([]workload.Request, 0, copies*len(reqs))
	for c := range copies {
		salt := splitmix.Mix(uint64(c) + splitmix.Gamma)
		remap := func(bs []uint64) []uint64 {
			if c == 0 || bs == nil {
				return bs
			}
			r := make([]uint64, len(bs))
			for i, b := range bs {
				r[i] = splitmix.Mix(b ^ salt)
			}
			return r
		}
		for _, r := range reqs {
			r.ID = uint64(len(out))
			r.Blocks, r.OutputBlocks = remap(r.Blocks), remap(r.OutputBlocks)
			if c > 0 && r.SessionID != "" {
				r.SessionID += "#" + strconv.Itoa(c)
			}
			out = append(out, r)
		}
	}
	return out, copies
}

// concurrency estimates how many of reqs a server of ec runs at once when saturated: its slots
// (slot family), or for the batch family max_num_seqs capped by how many requests of the mean
// prompt-plus-output length its KV cache holds (prefix sharing lets more in: an underestimate,
// which runDepth absorbs).
func concurrency(ec engine.Config, reqs []workload.Request) int {
	if ec.Family == engine.FamilySlot {
		return ec.MaxNumSeqs
	}
	tokens := 0
	for _, r := range reqs {
		tokens += r.InputTokens + r.OutputTokens
	}
	mean := max(1, tokens/len(reqs))
	return max(1, min(ec.MaxNumSeqs, (ec.NumGPUBlocks-1)*ec.BlockSize/mean))
}

// roundRobin sends request i to candidate i mod the candidates (on a fleet without
// disaggregation every server, in order); on a disaggregated fleet the decode and the prefill
// decisions each rotate on their own.
type roundRobin struct{ next [3]int }

// Route picks the cycle's next candidate in turn.
func (r *roundRobin) Route(c *sdk.Cycle, _ *cluster.Fleet) (cluster.Decision, error) {
	hop := min(max(int(c.Request.Disaggregation.Hop), 0), len(r.next)-1)
	d := cluster.Decision{Endpoint: r.next[hop] % len(c.Endpoints)}
	r.next[hop]++
	return d, nil
}
