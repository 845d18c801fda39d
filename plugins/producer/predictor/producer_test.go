package predictor

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/sdk"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// truth is the latency model the tests' samples follow: TTFT grows with the uncached prompt and
// the queue, TPOT with the decode load.
func truth(r *sdk.Request, s *sdk.EndpointState) (ttft, tpot float64) {
	uncached := (1 - s.PrefixMatch) * float64(r.InputTokens)
	ttft = 15 + 0.02*uncached + 30*float64(s.Waiting) + 0.004*float64(s.PrefillTokensInFlight)
	tpot = 7 + 0.0005*float64(s.DecodeTokensInFlight) + 2*s.KVCacheUsage
	return ttft, tpot
}

func randomState(rng *rand.Rand) (sdk.Request, sdk.EndpointState) {
	r := sdk.Request{InputTokens: int64(100 + rng.IntN(8000)), MaxOutputTokens: 200, Streaming: true}
	s := sdk.EndpointState{KVCacheUsage: rng.Float64(), Waiting: int64(rng.IntN(6)), Running: int64(rng.IntN(40)),
		InflightRequests: int64(rng.IntN(40)), PrefillTokensInFlight: int64(rng.IntN(20000)),
		DecodeTokensInFlight: int64(rng.IntN(30000)), PrefixMatch: float64(rng.IntN(5)) / 4}
	return r, s
}

// samples returns n samples dispatched from at, one every 10 ms, with 2 % noise; pred, when set,
// gives the prediction each carries.
func samples(rng *rand.Rand, n int, at time.Time, pred func(*sdk.Request, *sdk.EndpointState) sdk.Prediction) []sdk.Sample {
	out := make([]sdk.Sample, n)
	for i := range out {
		r, s := randomState(rng)
		r.ID = strconv.FormatUint(rng.Uint64(), 36)
		ttft, tpot := truth(&r, &s)
		out[i] = sdk.Sample{Request: r, EndpointID: "e", State: s, OutputTokens: 200,
			ActualTTFTMs: ttft * (1 + 0.02*rng.NormFloat64()), ActualTPOTMs: tpot * (1 + 0.02*rng.NormFloat64()),
			DispatchedAt: at.Add(time.Duration(i) * 10 * time.Millisecond)}
		if pred != nil {
			out[i].Predicted = pred(&r, &s)
		}
	}
	return out
}

func configure(t testing.TB, p *Producer, params map[string]any) {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Configure(raw); err != nil {
		t.Fatal(err)
	}
}

func cycle(rng *rand.Rand, n int, now time.Time) *sdk.Cycle {
	c := &sdk.Cycle{Now: now, Endpoints: make([]sdk.Endpoint, n)}
	c.Request, _ = randomState(rng)
	for i := range c.Endpoints {
		_, c.Endpoints[i].State = randomState(rng)
	}
	return c
}

// trainedProducer feeds 4,000 samples over 40 s to an inline-training producer.
func trainedProducer(t *testing.T, extra map[string]any) (*Producer, *rand.Rand) {
	t.Helper()
	p := New()
	params := map[string]any{"trainInline": true}
	for k, v := range extra {
		params[k] = v
	}
	configure(t, p, params)
	rng := rand.New(rand.NewPCG(1, 2))
	for b := range 40 {
		at := t0.Add(time.Duration(b) * time.Second)
		if _, err := p.Observe(context.Background(), samples(rng, 100, at, nil)); err != nil {
			t.Fatal(err)
		}
	}
	return p, rng
}

func TestNoModelNoPredictions(t *testing.T) {
	p := New()
	preds, err := p.Produce(context.Background(), cycle(rand.New(rand.NewPCG(1, 1)), 5, t0))
	if err != nil || len(preds) != 5 {
		t.Fatalf("Produce: %v, %v", preds, err)
	}
	for i, pr := range preds {
		if pr.Valid {
			t.Errorf("endpoint %d has a prediction before any model: %+v", i, pr)
		}
	}
	if _, err := p.Produce(context.Background(), nil); err == nil {
		t.Error("a nil cycle was accepted")
	}
}

func TestLearnsTheLatencyModel(t *testing.T) {
	for loss, objective := range map[string]string{LossGamma: "objective=gamma\n", LossSquared: "objective=regression\n"} {
		t.Run(loss, func(t *testing.T) {
			p, rng := trainedProducer(t, map[string]any{"meanLoss": loss})
			st := p.Stats()
			if st.ModelVersion < 3 || st.TrainingRows == 0 {
				t.Fatalf("after 40 s of samples: %+v", st)
			}
			if text := p.serving.Load().set.TTFT.Text(); !strings.Contains(string(text), objective) {
				t.Errorf("the TTFT model's header lacks %q", objective)
			}
			var ttftErr, tpotErr float64
			const n = 200
			for range n / 10 {
				c := cycle(rng, 10, t0.Add(41*time.Second))
				preds, err := p.Produce(context.Background(), c)
				if err != nil {
					t.Fatal(err)
				}
				for i, pr := range preds {
					ttft, tpot := truth(&c.Request, &c.Endpoints[i].State)
					if !pr.Valid {
						t.Fatalf("invalid prediction with a model in service: %+v", pr)
					}
					ttftErr += math.Abs(pr.TTFTMs-ttft) / ttft
					tpotErr += math.Abs(pr.TPOTMs-tpot) / tpot
				}
			}
			if ttftErr/n > 0.10 || tpotErr/n > 0.10 {
				t.Errorf("MAPE on fresh states: TTFT %.3f, TPOT %.3f; want <= 0.10", ttftErr/n, tpotErr/n)
			}
		})
	}
}

func TestRejectsBadParameters(t *testing.T) {
	for _, tt := range []struct{ params, says string }{
		{`{"meanLoss":"cubic"}`, "meanLoss"},
		{`{"objective":"median"}`, "objective"},
		{`{"model":{"trees":0}}`, "Trees"},
		{`{"quantile":1.5}`, "quantile"},
		{`{"nosuch":1}`, "nosuch"},
	} {
		if err := New().Configure([]byte(tt.params)); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("Configure(%s): %v; want an error naming %q", tt.params, err, tt.says)
		}
	}
}

func TestRetrainsOnlyWhenDue(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"trainInline": true, "retrainIntervalMs": 5000, "minNewSamples": 200, "youngRows": 0})
	rng := rand.New(rand.NewPCG(3, 4))
	observe := func(n int, at time.Time) uint64 {
		res, err := p.Observe(context.Background(), samples(rng, n, at, nil))
		if err != nil {
			t.Fatal(err)
		}
		return res.Stats.ModelVersion
	}
	if v := observe(150, t0); v != 0 {
		t.Errorf("trained on fewer than minNewSamples: version %d", v)
	}
	if v := observe(150, t0.Add(time.Second)); v != 1 {
		t.Errorf("enough samples, first training due: version %d", v)
	}
	if v := observe(300, t0.Add(2*time.Second)); v != 1 {
		t.Errorf("retrained before the interval: version %d", v)
	}
	if v := observe(10, t0.Add(9*time.Second)); v != 2 {
		t.Errorf("interval passed with new samples waiting: version %d", v)
	}
}

// TestYoungModelsRetrainOften: until the model has trained on youngRows rows, a training is
// due every youngMinNewSamples samples and youngRetrainIntervalMs; after, on the usual schedule.
func TestYoungModelsRetrainOften(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"trainInline": true, "retrainIntervalMs": 60000, "minNewSamples": 500,
		"youngRows": 150, "youngMinNewSamples": 40, "youngRetrainIntervalMs": 1000, "holdoutEvery": 0})
	rng := rand.New(rand.NewPCG(3, 4))
	observe := func(n int, at time.Duration) uint64 {
		res, err := p.Observe(context.Background(), samples(rng, n, t0.Add(at), nil))
		if err != nil {
			t.Fatal(err)
		}
		return res.Stats.ModelVersion
	}
	for _, step := range []struct {
		n    int
		at   time.Duration
		want uint64
		why  string
	}{
		{30, 0, 0, "fewer than youngMinNewSamples"},
		{30, time.Second, 1, "a young model's first training"},
		{50, 1500 * time.Millisecond, 1, "within youngRetrainIntervalMs"},
		{10, 3 * time.Second, 2, "young: interval passed, 60 new samples"},
		{100, 5 * time.Second, 3, "young: trained on 120 rows, fewer than youngRows"},
		{100, 7 * time.Second, 3, "grown up (220 rows): minNewSamples and retrainIntervalMs apply"},
	} {
		if v := observe(step.n, step.at); v != step.want {
			t.Errorf("%s: version %d, want %d", step.why, v, step.want)
		}
	}
}

func TestInlineTrainingIsReproducible(t *testing.T) {
	a, rngA := trainedProducer(t, nil)
	b, _ := trainedProducer(t, nil)
	c := cycle(rngA, 20, t0.Add(time.Minute))
	pa, _ := a.Produce(context.Background(), c)
	pb, _ := b.Produce(context.Background(), c)
	for i := range pa {
		if pa[i] != pb[i] {
			t.Fatalf("endpoint %d: %+v vs %+v", i, pa[i], pb[i])
		}
	}
}

func TestProduceNeverWaitsForObserveOrTraining(t *testing.T) {
	p, rng := trainedProducer(t, nil)
	p.mu.Lock() // what Observe and a training's hand-over hold
	done := make(chan []sdk.Prediction)
	go func() {
		preds, _ := p.Produce(context.Background(), cycle(rng, 3, t0.Add(time.Minute)))
		done <- preds
	}()
	select {
	case preds := <-done:
		if !preds[0].Valid {
			t.Error("no prediction")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Produce waited for the producer's lock")
	}
	p.mu.Unlock()
}

func TestBackgroundTraining(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"minNewSamples": 100})
	rng := rand.New(rand.NewPCG(5, 6))
	if _, err := p.Observe(context.Background(), samples(rng, 500, t0, nil)); err != nil {
		t.Fatal(err)
	}
	p.WaitIdle()
	if v := p.Stats().ModelVersion; v != 1 {
		t.Errorf("after a background training: version %d", v)
	}
}

func TestAcceptsOnlyLearnableSamples(t *testing.T) {
	p := New()
	rng := rand.New(rand.NewPCG(7, 8))
	s := samples(rng, 4, t0, nil)
	s[1].Request.Streaming = false // whole response at once: no TTFT, no TPOT
	s[2].OutputTokens, s[2].ActualTPOTMs = 1, 0
	s[3].ActualTTFTMs, s[3].ActualTPOTMs = 0, 0
	res, err := p.Observe(context.Background(), s)
	if err != nil || res.Accepted != 2 {
		t.Errorf("accepted %d (%v), want 2", res.Accepted, err)
	}
}

func TestWarmStartFromModelDir(t *testing.T) {
	dir := t.TempDir()
	p, rng := trainedProducer(t, map[string]any{"modelDir": dir})
	c := cycle(rng, 8, t0.Add(time.Minute))
	want, _ := p.Produce(context.Background(), c)

	restarted := New()
	configure(t, restarted, map[string]any{"modelDir": dir})
	got, _ := restarted.Produce(context.Background(), c)
	// The prior persisted with the trees is the one they were trained against; the running
	// producer's prior learned from the samples after that training, so they differ a little.
	for i := range want {
		if !got[i].Valid || math.Abs(got[i].TTFTMs/want[i].TTFTMs-1) > 0.01 || math.Abs(got[i].TPOTMs/want[i].TPOTMs-1) > 0.01 {
			t.Fatalf("endpoint %d after restart: %+v, before %+v", i, got[i], want[i])
		}
	}
	if v := restarted.Stats().ModelVersion; v != p.Stats().ModelVersion {
		t.Errorf("restarted at version %d, want %d", v, p.Stats().ModelVersion)
	}
}

func TestRejectsAnUnusableModelDir(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{model.TTFTFile, model.TPOTFile} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("not a model"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := New()
	raw, _ := json.Marshal(map[string]any{"modelDir": dir, "objective": "quantile"})
	err := p.Configure(raw)
	if err == nil || !strings.Contains(err.Error(), "modelDir") || !strings.Contains(err.Error(), "ttft.txt") {
		t.Fatalf("Configure: %v", err)
	}
	if p.Params().Objective != ObjectiveMean {
		t.Error("a failed Configure changed the parameters")
	}
}

func TestDriftGuard(t *testing.T) {
	p, rng := trainedProducer(t, map[string]any{"driftMAPE": 0.3, "driftMinSamples": 50, "retrainIntervalMs": 60000})
	v := p.Stats().ModelVersion
	c := cycle(rng, 4, t0.Add(42*time.Second))
	before, _ := p.Produce(context.Background(), c)
	way := func(r *sdk.Request, s *sdk.EndpointState) sdk.Prediction {
		ttft, tpot := truth(r, s)
		return sdk.Prediction{Valid: true, TTFTMs: ttft * 3, TPOTMs: tpot}
	}
	res, _ := p.Observe(context.Background(), samples(rng, 60, t0.Add(41*time.Second), way))
	if !res.Stats.Drift || res.Stats.ModelVersion != v {
		t.Fatalf("after 60 predictions 200 %% off: %+v", res.Stats)
	}
	// The TTFT trees are held back and the prior, still accurate, serves TTFT alone; the TPOT
	// trees still serve TPOT (on a prior base that moved a little with the last samples).
	preds, _ := p.Produce(context.Background(), c)
	for i, pr := range preds {
		e := &c.Endpoints[i]
		ttft, tpot := p.current().prior.Predict(&c.Request, e.ID, "", &e.State)
		if !pr.Valid || pr.TTFTMs != floor(ttft) || pr.TPOTMs == floor(tpot) || math.Abs(pr.TPOTMs/before[i].TPOTMs-1) > 0.02 {
			t.Fatalf("endpoint %d under TTFT drift: %+v, want the prior's TTFT %.2f and the trees' TPOT (%.2f before)", i, pr, ttft, before[i].TPOTMs)
		}
	}
	// A minute later, retraining on the same (truthful) samples brings the held-out error down.
	res, _ = p.Observe(context.Background(), samples(rng, 200, t0.Add(2*time.Minute), nil))
	if res.Stats.Drift || res.Stats.ModelVersion != v+1 {
		t.Fatalf("after retraining: %+v", res.Stats)
	}
	preds, _ = p.Produce(context.Background(), cycle(rng, 4, t0.Add(2*time.Minute)))
	if !preds[0].Valid {
		t.Error("predictions still invalid after the drift cleared")
	}
}

// TestTPOTDriftSparesTTFT: a drifting TPOT model falls back to the prior's TPOT while the TTFT
// trees keep serving.
func TestTPOTDriftSparesTTFT(t *testing.T) {
	p, rng := trainedProducer(t, map[string]any{"driftMAPE": 0.3, "driftMinSamples": 50, "retrainIntervalMs": 60000})
	c := cycle(rng, 4, t0.Add(42*time.Second))
	before, _ := p.Produce(context.Background(), c)
	way := func(r *sdk.Request, s *sdk.EndpointState) sdk.Prediction {
		ttft, tpot := truth(r, s)
		return sdk.Prediction{Valid: true, TTFTMs: ttft, TPOTMs: tpot * 3}
	}
	if res, _ := p.Observe(context.Background(), samples(rng, 60, t0.Add(41*time.Second), way)); !res.Stats.Drift {
		t.Fatalf("after 60 TPOT predictions 200 %% off: %+v", res.Stats)
	}
	preds, _ := p.Produce(context.Background(), c)
	for i, pr := range preds {
		e := &c.Endpoints[i]
		ttft, tpot := p.current().prior.Predict(&c.Request, e.ID, "", &e.State)
		if !pr.Valid || pr.TTFTMs == floor(ttft) || math.Abs(pr.TTFTMs/before[i].TTFTMs-1) > 0.02 || pr.TPOTMs != floor(tpot) {
			t.Fatalf("endpoint %d under TPOT drift: %+v, want the trees' TTFT (%.2f before) and the prior's TPOT %.2f", i, pr, before[i].TTFTMs, tpot)
		}
	}
}

// TestDriftFallbackOrder: under drift the trees are held back; the prior serves alone while its
// own error is within driftFactor × driftMAPE, and nothing serves (the stages' heuristics take
// over) when it is not or when the prior is off.
func TestDriftFallbackOrder(t *testing.T) {
	way := func(r *sdk.Request, s *sdk.EndpointState) sdk.Prediction {
		ttft, tpot := truth(r, s)
		return sdk.Prediction{Valid: true, TTFTMs: ttft * 3, TPOTMs: tpot}
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		valid  bool
	}{
		{"prior trusted", map[string]any{"driftMAPE": 0.3, "driftMinSamples": 50}, true},
		// a bar of 0.2 %: the prior's own error on 2 % noise is above it
		{"prior not trusted", map[string]any{"driftMAPE": 0.001, "driftFactor": 2, "driftMinSamples": 50}, false},
		{"prior off", map[string]any{"driftMAPE": 0.3, "driftMinSamples": 50, "prior": "off"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.params["retrainIntervalMs"] = 60000
			p, rng := trainedProducer(t, tc.params)
			res, _ := p.Observe(context.Background(), samples(rng, 60, t0.Add(41*time.Second), way))
			if !res.Stats.Drift {
				t.Fatalf("after 60 predictions 200 %% off: %+v", res.Stats)
			}
			preds, _ := p.Produce(context.Background(), cycle(rng, 4, t0.Add(42*time.Second)))
			for i, pr := range preds {
				if pr.Valid != tc.valid {
					t.Fatalf("endpoint %d under drift: %+v, want valid %v", i, pr, tc.valid)
				}
			}
		})
	}
}

// TestPriorServesBeforeTheFirstTrees: from priorFit.minSamples samples on, before any trees, the
// prior predicts, within 15 % on the tests' latency law; with the prior off nothing does.
func TestPriorServesBeforeTheFirstTrees(t *testing.T) {
	for _, prior := range []string{PriorResidual, PriorOff} {
		p := New()
		configure(t, p, map[string]any{"prior": prior, "minNewSamples": 1000, "youngRows": 0})
		rng := rand.New(rand.NewPCG(11, 12))
		if _, err := p.Observe(context.Background(), samples(rng, 40, t0, nil)); err != nil {
			t.Fatal(err)
		}
		c := cycle(rng, 50, t0.Add(time.Second))
		preds, _ := p.Produce(context.Background(), c)
		mape := 0.0
		for i, pr := range preds {
			if pr.Valid != (prior == PriorResidual) {
				t.Fatalf("prior %s, no trees: endpoint %d %+v", prior, i, pr)
			}
			ttft, _ := truth(&c.Request, &c.Endpoints[i].State)
			mape += math.Abs(pr.TTFTMs-ttft) / ttft / float64(len(preds))
		}
		if prior == PriorResidual && mape > 0.15 {
			t.Errorf("the prior's TTFT MAPE after 40 samples: %.3f, want <= 0.15", mape)
		}
	}
}

// TestFirstTokenSamplesServeTTFT: a producer that has seen only first-token samples (a fleet
// whose answers are still decoding) predicts TTFT with TPOT unknown (0); the finished samples
// that follow add TPOT.
func TestFirstTokenSamplesServeTTFT(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"minNewSamples": 1000, "youngRows": 0})
	rng := rand.New(rand.NewPCG(13, 14))
	all := samples(rng, 80, t0, nil)
	first, finished := all[:40], all[40:]
	for i := range first {
		first[i].ActualTPOTMs, first[i].OutputTokens = 0, 0
		finished[i].ActualTTFTMs = 0
	}
	produce := func(stage string) []sdk.Prediction {
		t.Helper()
		res, err := p.Observe(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		c := cycle(rng, 20, t0.Add(time.Second))
		preds, _ := p.Produce(context.Background(), c)
		for i, pr := range preds {
			ttft, _ := truth(&c.Request, &c.Endpoints[i].State)
			if !pr.Valid || math.Abs(pr.TTFTMs-ttft)/ttft > 0.3 {
				t.Fatalf("%s: endpoint %d %+v, true TTFT %.1f; %+v", stage, i, pr, ttft, res.Stats)
			}
		}
		return preds
	}
	if res, _ := p.Observe(context.Background(), first); res.Accepted != len(first) {
		t.Fatalf("accepted %d of %d first-token samples", res.Accepted, len(first))
	}
	for i, pr := range produce("first tokens only") {
		if pr.TPOTMs != 0 {
			t.Fatalf("endpoint %d predicts TPOT %.2f without a finished answer", i, pr.TPOTMs)
		}
	}
	if res, _ := p.Observe(context.Background(), finished); res.Accepted != len(finished) {
		t.Fatalf("accepted %d of %d finished samples", res.Accepted, len(finished))
	}
	for i, pr := range produce("both") {
		if !(pr.TPOTMs > 0) {
			t.Fatalf("endpoint %d predicts no TPOT after %d finished answers", i, len(finished))
		}
	}
}

func TestQuantileReportsCoverage(t *testing.T) {
	p, rng := trainedProducer(t, map[string]any{"objective": "quantile"})
	predict := func(r *sdk.Request, s *sdk.EndpointState) sdk.Prediction {
		c := &sdk.Cycle{Request: *r, Endpoints: []sdk.Endpoint{{State: *s}}, Now: t0.Add(time.Minute)}
		pr, _ := p.Produce(context.Background(), c)
		return pr[0]
	}
	res, _ := p.Observe(context.Background(), samples(rng, 300, t0.Add(41*time.Second), predict))
	cov := res.Stats.TTFT.QuantileCoverage
	if cov == nil || *cov < 0.75 || *cov > 0.99 {
		t.Errorf("p90 TTFT coverage %v, want about 0.9", cov)
	}
}

// BenchmarkProduce100 times Produce for a cycle of 100 endpoints with the default model size.
func BenchmarkProduce100(b *testing.B) {
	p := New()
	configure(b, p, map[string]any{"trainInline": true})
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 40 {
		if _, err := p.Observe(context.Background(), samples(rng, 100, t0.Add(time.Duration(k)*time.Second), nil)); err != nil {
			b.Fatal(err)
		}
	}
	c := cycle(rng, 100, t0.Add(time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Produce(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNoisyWorkloadIsNotDrift: latencies that are inherently hard to predict (±50 % noise) give a
// large error from the start; the guard compares the live error with the model's own held-out
// error, so it stays off and the predictions keep serving.
func TestNoisyWorkloadIsNotDrift(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"trainInline": true, "driftMinSamples": 50})
	rng := rand.New(rand.NewPCG(9, 10))
	noisy := func(s []sdk.Sample) []sdk.Sample {
		for i := range s {
			s[i].ActualTTFTMs *= 0.5 + rng.Float64()
		}
		return s
	}
	for b := range 30 {
		if _, err := p.Observe(context.Background(), noisy(samples(rng, 100, t0.Add(time.Duration(b)*time.Second), nil))); err != nil {
			t.Fatal(err)
		}
	}
	predict := func(r *sdk.Request, s *sdk.EndpointState) sdk.Prediction {
		pr, _ := p.Produce(context.Background(), &sdk.Cycle{Request: *r, Endpoints: []sdk.Endpoint{{State: *s}}, Now: t0.Add(31 * time.Second)})
		return pr[0]
	}
	res, _ := p.Observe(context.Background(), noisy(samples(rng, 300, t0.Add(31*time.Second), predict)))
	if res.Stats.TTFT.MAPE < p.Params().DriftMAPE || res.Stats.Drift {
		t.Errorf("live TTFT MAPE %.3f (floor %.2f), drift %v: want an error above the floor and no drift",
			res.Stats.TTFT.MAPE, p.Params().DriftMAPE, res.Stats.Drift)
	}
}

// TestOutdatedOwnModelsAreRetrained: sets this producer persisted over other features (an
// earlier version's, every version kept) do not fail Configure; the producer starts cold and
// retrains.
func TestOutdatedOwnModelsAreRetrained(t *testing.T) {
	dir := t.TempDir()
	trainedProducer(t, map[string]any{"modelDir": dir})
	metaFiles, _ := filepath.Glob(filepath.Join(dir, "v*", model.MetaFile))
	for _, metaFile := range metaFiles {
		raw, err := os.ReadFile(metaFile)
		if err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		meta["ttft_features"] = []string{"an", "older", "feature", "set"}
		raw, _ = json.Marshal(meta)
		if err := os.WriteFile(metaFile, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := New()
	configure(t, p, map[string]any{"modelDir": dir})
	if v := p.Stats().ModelVersion; v != 0 {
		t.Errorf("loaded an outdated model (version %d)", v)
	}
}
