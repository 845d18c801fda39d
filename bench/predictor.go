package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/feedback"
	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/plugins/producer/predictor"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// PredictorOptions are what RunPredictor measures: bench predictor's flags.
type PredictorOptions struct {
	// Scenario is the workload the samples come from, Preset the engine preset.
	Scenario, Preset string
	// Params are producer parameters merged over the defaults, as JSON ("" for none).
	Params string
	// Servers is the number of simulated servers; Rows the training rows (at least 100);
	// Endpoints the endpoints per predicted cycle and Cycles the cycles Produce is timed on
	// (both positive).
	Servers, Rows, Endpoints, Cycles int
	// Rate is the arrival rate per server in requests/s (0: the scenario's default); Noise the
	// relative standard deviation of engine step times.
	Rate, Noise float64
	// Seed seeds the workload, the noise and the routing.
	Seed uint64
	// OnlineLoad, when positive, also runs the predicted-latency pipeline (examples/pipeline.yaml
	// in Examples) on the scenario at this fraction of the fleet's saturation rate (Saturation,
	// or measured as bench routing --load does; Trace for the trace scenarios) and scores its
	// dispatch-time predictions as the run went on: the producer learning online from its first
	// request, as it does behind a router.
	OnlineLoad, Saturation float64
	Examples, Trace        string
}

// PredictorResult is what RunPredictor measured; its JSON is bench predictor's.
type PredictorResult struct {
	Scenario  string  `json:"scenario"`
	Preset    string  `json:"preset"`
	Noise     float64 `json:"noise"`
	Seed      uint64  `json:"seed"`
	Trees     int     `json:"trees"`
	NumLeaves int     `json:"num_leaves"`
	MaxDepth  int     `json:"max_depth"`
	TrainRows uint64  `json:"train_rows"`
	HeldOut   int     `json:"held_out_rows"`
	// TrainMs is both targets' training (and held-out evaluation) on one core.
	TrainMs          float64 `json:"train_ms"`
	PredictEndpoints int     `json:"predict_endpoints"`
	// PredictUs* time Produce in process: both models over every endpoint of a cycle.
	PredictUsP50 float64 `json:"predict_us_p50"`
	PredictUsP99 float64 `json:"predict_us_p99"`
	TTFTMAPE     float64 `json:"ttft_mape"`
	// OracleTTFTMAPE is the error, on the same held-out requests, of the simulation's own
	// expectation from the engine's exact state (no noise, no later arrivals): how much of
	// TTFT no predictor can know.
	OracleTTFTMAPE float64 `json:"oracle_ttft_mape"`
	TPOTMAPE       float64 `json:"tpot_mape"`
	TTFTP90Cover   float64 `json:"ttft_p90_coverage"`
	TPOTP90Cover   float64 `json:"tpot_p90_coverage"`
	QuantileMs     float64 `json:"quantile_train_ms"`
	// Online is the online run's accuracy (with OnlineLoad), OnlineSaturation the saturation rate
	// (fleet requests/s) its load is a fraction of.
	Online           *stats.Accuracy `json:"online_accuracy,omitempty"`
	OnlineLoad       float64         `json:"online_load,omitempty"`
	OnlineSaturation float64         `json:"online_saturation_rps,omitempty"`
}

// RunPredictor simulates a fleet (the engine model with its step-time noise) under a workload,
// routing each request to a random server so that samples span idle to loaded states, and keeps
// every finished request's sample. It trains the producer on o.Rows of them (one core), measures
// Produce for cycles of o.Endpoints endpoints in process, and scores the mean model's MAPE and the
// p90 model's coverage on the samples it did not train on.
func RunPredictor(o PredictorOptions) (*PredictorResult, error) {
	if o.Rows < 100 || o.Endpoints < 1 || o.Cycles < 1 {
		return nil, fmt.Errorf("--rows must be at least 100, --endpoints and --cycles positive")
	}
	train, held, err := simulatedSamples(o)
	if err != nil {
		return nil, err
	}
	res := &PredictorResult{Scenario: o.Scenario, Preset: o.Preset, Noise: o.Noise, Seed: o.Seed,
		TrainRows: uint64(len(train)), HeldOut: len(held), PredictEndpoints: o.Endpoints}

	prev := runtime.GOMAXPROCS(1) // training is single-threaded; measure it on one core
	mean, took, err := trainPredictor(o.Params, "mean", train)
	if err != nil {
		runtime.GOMAXPROCS(prev)
		return nil, err
	}
	res.TrainMs = ms(took)
	p90, took, err := trainPredictor(o.Params, "quantile", train)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		return nil, err
	}
	res.QuantileMs = ms(took)
	mp := mean.Params().Model
	res.Trees, res.NumLeaves, res.MaxDepth = mp.Trees, mp.NumLeaves, mp.MaxDepth

	res.TTFTMAPE, res.TPOTMAPE = heldOutErrors(mean, held, func(pred, actual float64) float64 { return math.Abs(pred-actual) / actual })
	res.TTFTP90Cover, res.TPOTP90Cover = heldOutErrors(p90, held, func(pred, actual float64) float64 {
		if actual <= pred {
			return 1
		}
		return 0
	})
	for i := range held {
		res.OracleTTFTMAPE += math.Abs(held[i].Predicted.TTFTMs-held[i].ActualTTFTMs) / held[i].ActualTTFTMs / float64(len(held))
	}
	us := sortedMicros(timeProduce(mean, held, o.Endpoints, o.Cycles))
	res.PredictUsP50, res.PredictUsP99 = quantile.Sorted(us, 0.50), quantile.Sorted(us, 0.99)
	if o.OnlineLoad > 0 {
		if err := res.runOnline(o); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// runOnline runs the predicted-latency pipeline on o's scenario at o.OnlineLoad and keeps the
// accuracy of its predictions.
func (r *PredictorResult) runOnline(o PredictorOptions) error {
	lo := LadderOptions{RoutingOptions: RoutingOptions{Scenario: o.Scenario, Strategies: "predicted-latency",
		Preset: o.Preset, Examples: o.Examples, Trace: o.Trace, Servers: o.Servers, Noise: o.Noise, Seed: o.Seed},
		Loads: []float64{o.OnlineLoad}, Saturation: o.Saturation}
	lr, err := RunLadder(context.Background(), lo)
	if err != nil {
		return fmt.Errorf("online run: %w", err)
	}
	st := lr.Loads[0].Result.Strategies["predicted-latency"]
	if st.Unavailable != "" {
		return fmt.Errorf("online run: %s", st.Unavailable)
	}
	if st.Online == nil {
		return fmt.Errorf("online run: no request had a valid prediction")
	}
	r.Online, r.OnlineLoad, r.OnlineSaturation = st.Online, o.OnlineLoad, lr.Saturation.FleetRPS
	return nil
}

// WriteText prints the result as bench predictor's text.
func (r *PredictorResult) WriteText(out io.Writer) error {
	_, err := fmt.Fprintf(out, "%s on %s, noise %.2f: %d trees × %d leaves\n"+
		"train %d rows: %.0f ms (p90 model %.0f ms)\nProduce, %d endpoints: p50 %.1f µs, p99 %.1f µs\n"+
		"held out %d rows: TTFT MAPE %.2f%% (the simulation's own expectation: %.2f%%), TPOT MAPE %.2f%%, p90 coverage TTFT %.3f TPOT %.3f\n",
		r.Scenario, r.Preset, r.Noise, r.Trees, r.NumLeaves, r.TrainRows, r.TrainMs, r.QuantileMs,
		r.PredictEndpoints, r.PredictUsP50, r.PredictUsP99, r.HeldOut, 100*r.TTFTMAPE, 100*r.OracleTTFTMAPE, 100*r.TPOTMAPE,
		r.TTFTP90Cover, r.TPOTP90Cover)
	if err == nil && r.Online != nil {
		_, err = fmt.Fprintf(out, "online at load %.2f of %.2f req/s: %s\n", r.OnlineLoad, r.OnlineSaturation, r.Online)
	}
	return err
}

// simulatedSamples runs the workload through the simulated fleet with random routing and returns
// rows training samples and every later sample with a target, held out.
func simulatedSamples(o PredictorOptions) (train, held []sdk.Sample, err error) {
	fleet, err := simulatedFleet(o.Preset, o.Servers, o.Noise, o.Seed)
	if err != nil {
		return nil, nil, err
	}
	// Rows to train on, then a quarter as many held out, then as many again that only keep the
	// fleet loaded while the held-out requests decode: without them the held-out requests would
	// be the fleet's last, decoding as the arrivals stop, and a batch engine's TPOT, which the
	// prompts arriving during a decode slow, would be lower than any loaded state predicts.
	heldRows := max(o.Rows/4, 200)
	want := o.Rows + 2*heldRows
	w, err := workload.Scenario(o.Scenario, workload.Params{Servers: o.Servers, RatePerServer: o.Rate,
		Requests: want, Seed: o.Seed, TracePath: o.Trace})
	if err != nil {
		return nil, nil, err
	}
	// A request's TTFT sample comes at its first token, its TPOT sample when it finishes: a row
	// here is both, in the order of first tokens.
	var all []sdk.Sample
	row := map[string]int{}
	router := randomRouter{rand.New(rand.NewPCG(o.Seed, 0x7a2d))}
	if _, err := cluster.Run(fleet, w.Requests, router, func(s sdk.Sample, _ time.Time) {
		if s.ActualTTFTMs > 0 {
			row[s.Request.ID] = len(all)
			all = append(all, s)
		} else if i, ok := row[s.Request.ID]; ok {
			all[i].ActualTPOTMs, all[i].OutputTokens = s.ActualTPOTMs, s.OutputTokens
		}
	}); err != nil {
		return nil, nil, err
	}
	all = slices.DeleteFunc(all, func(s sdk.Sample) bool { return !s.Request.Streaming || s.OutputTokens < 2 })
	if len(all) < o.Rows+100 {
		return nil, nil, fmt.Errorf("the simulation gave %d samples; %d rows and 100 held out need more requests", len(all), o.Rows)
	}
	return all[:o.Rows], all[o.Rows:min(o.Rows+heldRows, len(all))], nil
}

// randomRouter sends each request to a uniformly random server, with the simulation's own TTFT
// expectation there as the prediction: the error floor of any predictor (see OracleTTFTMAPE).
type randomRouter struct{ rng *rand.Rand }

// Route picks a server uniformly at random and predicts the simulation's expected TTFT there.
func (r randomRouter) Route(_ *sdk.Cycle, f *cluster.Fleet) (cluster.Decision, error) {
	i := r.rng.IntN(len(f.Engines))
	ttft, err := f.ExpectedTTFT(i)
	if err != nil {
		return cluster.Decision{}, err
	}
	return cluster.Decision{Endpoint: i, Predicted: sdk.Prediction{Valid: true, TTFTMs: float64(ttft) / 1e6}}, nil
}

// trainPredictor trains a fresh producer with the objective on every sample at once and returns
// it with the training's duration.
func trainPredictor(params, objective string, train []sdk.Sample) (*predictor.Producer, time.Duration, error) {
	p := predictor.New()
	raw := map[string]any{}
	if params != "" {
		if err := json.Unmarshal([]byte(params), &raw); err != nil {
			return nil, 0, fmt.Errorf("--params: %w", err)
		}
	}
	raw["objective"], raw["trainInline"], raw["holdoutEvery"] = objective, true, 0
	// One training, on every sample: not the young schedule's trainings on the first batches.
	raw["samplesPerBucket"], raw["minNewSamples"], raw["retrainIntervalMs"], raw["youngRows"] = len(train), len(train), 0, 0
	b, _ := json.Marshal(raw)
	if err := p.Configure(b); err != nil {
		return nil, 0, fmt.Errorf("--params: %w", err)
	}
	// In batches, as the router delivers them: the prior publishes what it learned (its speed
	// factors per endpoint among it) once per batch.
	for from := 0; from < len(train); from += feedback.DefaultMaxBatch {
		if _, err := p.Observe(context.Background(), train[from:min(from+feedback.DefaultMaxBatch, len(train))]); err != nil {
			return nil, 0, err
		}
	}
	t := p.LastTraining()
	if t.Rows < uint64(len(train))*9/10 {
		return nil, 0, fmt.Errorf("the producer trained on %d rows of %d samples", t.Rows, len(train))
	}
	return p, t.Took, nil
}

// heldOutErrors averages score(prediction, actual) over the held-out samples, per target.
func heldOutErrors(p *predictor.Producer, held []sdk.Sample, score func(pred, actual float64) float64) (ttft, tpot float64) {
	for i := range held {
		s := &held[i]
		c := &sdk.Cycle{Request: s.Request, Endpoints: []sdk.Endpoint{{ID: s.EndpointID, State: s.State}}, Now: s.DispatchedAt}
		preds, err := p.Produce(context.Background(), c)
		if err != nil || !preds[0].Valid {
			return math.NaN(), math.NaN()
		}
		ttft += score(preds[0].TTFTMs, s.ActualTTFTMs)
		tpot += score(preds[0].TPOTMs, s.ActualTPOTMs)
	}
	n := float64(len(held))
	return ttft / n, tpot / n
}

// timeProduce times Produce on cycles of n endpoints whose states are the held-out samples'.
func timeProduce(p *predictor.Producer, held []sdk.Sample, n, cycles int) []time.Duration {
	lat := make([]time.Duration, 0, cycles)
	for k := range cycles {
		c := &sdk.Cycle{Request: held[k%len(held)].Request, Endpoints: make([]sdk.Endpoint, n), Now: held[0].DispatchedAt}
		for i := range c.Endpoints {
			c.Endpoints[i] = sdk.Endpoint{ID: strconv.Itoa(i), State: held[(k*n+i)%len(held)].State}
		}
		began := time.Now()
		_, _ = p.Produce(context.Background(), c)
		lat = append(lat, time.Since(began))
	}
	return lat
}
