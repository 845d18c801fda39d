package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// bench pipeline decides the way the router's decider does (host/proxy/decide.go): rounds, each
// taking the waiting requests in arrival order and handing their cycles to the pipeline at once,
// up to proxy.RoundsInFlight rounds under way together (host/proxy/overlap.go: a round that starts
// while the one before it is under way adds that round's placements before its picker). Its
// --concurrency is the requests waiting for a decision: clients in a closed loop, each sending its
// next request as soon as its decision is back. So a round takes min(waiting, --round) cycles;
// with more clients than a round takes, the rest wait in the queue — for a round to start beside
// the one under way, or for the rounds ahead — and that wait counts in their latency. The cohort
// mode (--cohorts) is the bench before rounds, and the router for a scheduler that does not decide
// rounds: each cycle its own Pipeline.Run, --concurrency of them at once, which the pipeline
// gathers into cohorts.

// measureRounds decides n requests in rounds, at most overlap of them under way at once, as the
// router's decider does: waiting clients (a closed loop: each sends its next request when its
// decision is back) keep a first-in-first-out queue, and each round takes up to size of them from
// its head and calls decide(first, k, prior) with the k requests first, first+1, … (the queue
// always holds consecutive requests) and, when the round before it was still under way as it
// began, that round's placements (pipeline.Prior; nil otherwise). decide returns the round's own
// placements, by endpoint id. A client answered sends its next request pause later (0: at once).
// A request's latency is the time from its arrival in the queue to the end of its round: its
// round's duration, plus the wait for a round to take it. It returns the latencies by request, the
// wall time and the number of rounds.
func measureRounds(n, waiting, size, overlap int, pause time.Duration, decide func(first, k int, prior pipeline.Prior) map[string]int) ([]time.Duration, time.Duration, int) {
	lat := make([]time.Duration, n)
	arrived := make([]time.Time, n)
	began := time.Now()
	var mu sync.Mutex
	free := sync.NewCond(&mu)
	head, tail, running := 0, min(waiting, n), 0 // requests [head, tail) wait
	for i := range tail {
		arrived[i] = began
	}
	rounds := 0
	var prev *benchRound
	var wg sync.WaitGroup
	mu.Lock()
	for head < n {
		for running == max(overlap, 1) || head == tail {
			free.Wait() // a round under way brings the next requests when it ends
		}
		first, k := head, min(size, tail-head)
		head, running, rounds = head+k, running+1, rounds+1
		r := &benchRound{settled: make(chan struct{})}
		prior := prev.prior()
		prev = r
		mu.Unlock()
		wg.Go(func() {
			r.placed = decide(first, k, prior)
			close(r.settled)
			done := time.Now()
			send := func(at time.Time) { // the k clients answered send their next; mu held
				for j := 0; j < k && tail < n; j++ {
					arrived[tail] = at
					tail++
				}
			}
			mu.Lock()
			for i := first; i < first+k; i++ {
				lat[i] = done.Sub(arrived[i])
			}
			if pause == 0 {
				send(done)
			}
			running--
			free.Broadcast()
			mu.Unlock()
			if pause > 0 {
				time.Sleep(pause)
				mu.Lock()
				send(time.Now())
				free.Broadcast()
				mu.Unlock()
			}
		})
		mu.Lock()
	}
	mu.Unlock()
	wg.Wait()
	return lat, time.Since(began), rounds
}

// benchRound is a round of measureRounds under way.
type benchRound struct {
	settled chan struct{} // closed when its picks are known
	placed  map[string]int
}

// prior is what a round that starts now must add before its picker: r's placements, once known,
// while r is under way; nil when r is done (or nil): the next round reads after it.
func (r *benchRound) prior() pipeline.Prior {
	if r == nil {
		return nil
	}
	select {
	case <-r.settled:
		return nil
	default:
		return func() map[string]int { <-r.settled; return r.placed }
	}
}

// passes splits the k requests from first into consecutive runs of at most maxBatch, as
// Pipeline.RunRound decides a round larger than its maxBatch, and calls pass with each.
func passes(first, k, maxBatch int, pass func(first, k int)) {
	for start := first; start < first+k; start += maxBatch {
		pass(start, min(maxBatch, first+k-start))
	}
}

// driver drives n decisions in rounds of at most round cycles, conc requests waiting, overlap
// rounds under way at once (measureRounds), or with round 0 in cohorts, conc at once (measure);
// each client waits pause after its decision before it sends its next request.
type driver struct {
	n, conc, round, overlap int
	maxBatch                int // the pipeline's: a larger round is decided in passes of at most this many
	pause                   time.Duration
}

// warm runs the driver's decisions on at most 500 cycles: connections, caches and the scheduler
// warm up.
func (d driver) warm(one func(i int), round func(first, k int, prior pipeline.Prior) map[string]int) {
	w := d
	w.n, w.pause = min(d.n, 500), 0
	w.run(one, round)
}

// run drives the n decisions: one(i) for cycle i in cohorts, round(first, k, prior) for a round.
// It returns each decision's latency, the wall time and the rounds (0 in cohorts).
func (d driver) run(one func(i int), round func(first, k int, prior pipeline.Prior) map[string]int) ([]time.Duration, time.Duration, int) {
	if d.round == 0 {
		lat, wall := measure(d.n, d.conc, d.pause, one)
		return lat, wall, 0
	}
	return measureRounds(d.n, d.conc, d.round, d.overlap, d.pause, round)
}

// decisions makes the bench's decisions on copies of the pool's cycles, cycle i from pool[i mod
// len] with seed i, with flow control when the config enables it.
type decisions struct {
	ctx  context.Context
	p    *pipeline.Pipeline
	pool []*sdk.Cycle
	flow bool
	// detect is the detector's call by cycle (each decision writes its own); saturated counts the
	// decisions that found no endpoint with room, accounted the picks that accounted for their
	// round (pipeline.RoundTrace.Accounted).
	detect               []time.Duration
	saturated, accounted atomic.Int64
}

// cycle is cycle i's copy.
func (d *decisions) cycle(i int) *sdk.Cycle {
	c := *d.pool[i%len(d.pool)]
	c.Seed = uint64(i)
	return &c
}

// one decides cycle i with Pipeline.Run.
func (d *decisions) one(i int) {
	c := d.cycle(i)
	if !d.flow {
		d.p.Run(d.ctx, c)
		return
	}
	room, took := decideWithFlow(d.ctx, d.p, c)
	d.judged(i, room, took)
}

// round decides cycles first … first+k−1 as one round with Pipeline.RunRoundAfter, after prior's
// placements, as the router's decider does, and returns the round's placements (first picks, by
// endpoint id): with flow control, a detector that judges by state alone is asked about each
// cycle first, and a cycle with no endpoint with room leaves the round (the router queues it);
// one that reads the predictions is asked about each decision after the round.
func (d *decisions) round(first, k int, prior pipeline.Prior) map[string]int {
	ctxs, cycles, at := make([]context.Context, 0, k), make([]*sdk.Cycle, 0, k), make([]int, 0, k)
	for i := first; i < first+k; i++ {
		c := d.cycle(i)
		if d.flow && d.p.DetectsBefore(&c.Request) {
			room, took := detectBefore(d.ctx, d.p, c)
			if d.judged(i, room, took); !room {
				continue
			}
		}
		ctxs, cycles, at = append(ctxs, d.ctx), append(cycles, c), append(at, i)
	}
	placed := map[string]int{}
	for j, t := range d.p.RunRoundAfter(ctxs, cycles, prior) {
		if t.Round != nil && t.Round.Accounted {
			d.accounted.Add(1)
		}
		if len(t.Order) > 0 {
			placed[t.Candidates[t.Order[0]].ID]++
		}
		if d.flow && !d.p.DetectsBefore(&cycles[j].Request) {
			room, took := detectAfter(d.ctx, d.p, cycles[j], t)
			d.judged(at[j], room, took)
		}
	}
	return placed
}

// judged records the detector's verdict on cycle i and its call's duration.
func (d *decisions) judged(i int, room bool, took time.Duration) {
	if i < len(d.detect) {
		d.detect[i] = took
	}
	if !room {
		d.saturated.Add(1)
	}
}
