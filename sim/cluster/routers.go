package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/engine"
)

// PipelineRouter routes with the host's real pipeline — the same plugin processes and built-in
// stages an operator deploys — and sends each request to the first endpoint of the pick order.
type PipelineRouter struct {
	Pipeline *pipeline.Pipeline
}

// Route runs c through the pipeline. A rejected request, or one left without candidates, is shed.
func (r PipelineRouter) Route(c *sdk.Cycle, _ *Fleet) (Decision, error) {
	t := r.Pipeline.Run(context.Background(), c)
	if !t.Admitted || len(t.Order) == 0 {
		return Decision{Shed: true}, nil
	}
	first := t.Order[0]
	return Decision{Endpoint: first, Predicted: t.Candidates[first].Prediction, Candidates: t.Candidates}, nil
}

// ProfilesRouter runs each request through the pipeline of the scheduling profile Choose names
// for it, as the router does with a config of profiles (host/router); a name without a pipeline
// is an error.
type ProfilesRouter struct {
	Pipelines map[string]*pipeline.Pipeline
	Choose    func(*sdk.Request) string
}

// Route runs c through its profile's pipeline, as PipelineRouter does.
func (r ProfilesRouter) Route(c *sdk.Cycle, f *Fleet) (Decision, error) {
	name := r.Choose(&c.Request)
	p, ok := r.Pipelines[name]
	if !ok {
		return Decision{}, fmt.Errorf("no pipeline for scheduling profile %q", name)
	}
	return PipelineRouter{Pipeline: p}.Route(c, f)
}

// Oracle routes each request to the server where, simulated forward from the current state
// without later arrivals, it gets its first token soonest: the best a router that decides one
// request at a time could do with perfect knowledge of the fleet. It knows the servers' exact
// state (queues, KV cache contents, the step under way) and their latency model, but not the
// future arrivals and not the step-time noise: it simulates with expected step times. Among
// servers that tie, it takes the one with the fewest requests (so idle servers share the load),
// then the lower index.
//
// It is not an upper bound on every quality measure: choosing each request's fastest server
// also decides where the prefix cache grows, which later requests feel, and a heuristic that
// weighs load and cache affinity can come out ahead of it on some percentiles.
type Oracle struct{}

// Route simulates the arrival forward on every engine speculatively (Engine.Speculate restores
// it afterwards, exactly as if the simulation had run on a clone).
func (Oracle) Route(_ *sdk.Cycle, f *Fleet) (Decision, error) { return fastest(f, f.ExpectedTTFT) }

// fastest routes to the server with the lowest ttft(i); among ties, the one with the fewest
// requests, then the lower index.
func fastest(f *Fleet, ttft func(i int) (time.Duration, error)) (Decision, error) {
	best, bestTTFT, bestLoad := -1, time.Duration(0), 0
	for i, e := range f.Engines {
		ttft, err := ttft(i)
		if err != nil {
			return Decision{}, fmt.Errorf("oracle on server %d: %w", i, err)
		}
		m := e.Metrics()
		load := m.Waiting + m.Running + m.Pending
		if best < 0 || ttft < bestTTFT || (ttft == bestTTFT && load < bestLoad) {
			best, bestTTFT, bestLoad = i, ttft, load
		}
	}
	return Decision{Endpoint: best}, nil
}

// ExpectedTTFT is the TTFT the arrival would get on server i with no later arrivals and every
// step taking its expected time: what the oracle compares, and the best prediction of it any
// router could make (the simulation knows the engine's exact state, a router does not).
func (f *Fleet) ExpectedTTFT(i int) (time.Duration, error) {
	var ttft time.Duration
	var err error
	f.Engines[i].Speculate(func(s engine.Engine) {
		s.ExpectStepTimes()
		ttft, err = firstToken(s, f.Arrival, f.Now)
	})
	return ttft, err
}

// firstToken adds r to e at now and steps e until r's first token; it returns the TTFT.
func firstToken(e engine.Engine, r engine.Request, now time.Duration) (time.Duration, error) {
	if err := e.Add(r, now); err != nil {
		return 0, err
	}
	for e.Busy() {
		res := e.Step(e.NextStep())
		for _, ev := range res.Events {
			if ev.ID == r.ID && ev.Kind == engine.FirstToken {
				return ev.Time - now, nil
			}
		}
	}
	return 0, fmt.Errorf("request %d finished without a first token", r.ID)
}
