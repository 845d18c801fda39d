package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// producerPipeline runs the producer binary alone, persisting its models in dir.
func producerPipeline(t *testing.T, dir string) *pipeline.Pipeline {
	t.Helper()
	yaml := fmt.Sprintf(`plugins:
  - name: predictor
    type: predicted-latency-producer
    path: %s
    parameters:
      modelDir: %s
      minNewSamples: 50
pipeline:
  producer: {pluginRef: predictor}
`, filepath.Join(root, "bin", "plugins", "producer"), dir)
	file := filepath.Join(t.TempDir(), "producer.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return buildFile(t, file)
}

// latencySamples follow TTFT = 20 + 0.05 · uncached prompt, TPOT = 8 + 10 · KV usage.
func latencySamples(n int, at time.Time) []sdk.Sample {
	out := make([]sdk.Sample, n)
	for i := range out {
		st := sdk.EndpointState{KVCacheUsage: float64(i%10) / 10, PrefixMatch: float64(i%5) / 4, InflightRequests: int64(i % 7)}
		r := sdk.Request{ID: fmt.Sprint("s", i), InputTokens: int64(500 + 37*(i%50)), Streaming: true}
		out[i] = sdk.Sample{Request: r, EndpointID: "e", State: st, OutputTokens: 100,
			ActualTTFTMs: 20 + 0.05*(1-st.PrefixMatch)*float64(r.InputTokens), ActualTPOTMs: 8 + 10*st.KVCacheUsage,
			DispatchedAt: at.Add(time.Duration(i) * time.Millisecond)}
	}
	return out
}

func predictionsOf(t *testing.T, p *pipeline.Pipeline) []sdk.Endpoint {
	t.Helper()
	c := &sdk.Cycle{Request: sdk.Request{ID: "q", InputTokens: 1000, Streaming: true}, Now: time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC),
		Endpoints: []sdk.Endpoint{{ID: "a", State: sdk.EndpointState{KVCacheUsage: 0.2}}, {ID: "b", State: sdk.EndpointState{KVCacheUsage: 0.8, PrefixMatch: 0.5}}}}
	tr := p.Run(context.Background(), c)
	if tr.Producer == nil || tr.Producer.Fallback != "" {
		t.Fatalf("producer trace %+v", tr.Producer)
	}
	return tr.Candidates
}

// TestProducerLearnsPersistsAndRestartsWarm trains the producer through Observe, SIGKILLs it and
// checks that the restarted process predicts from its first cycle with the persisted model.
func TestProducerLearnsPersistsAndRestartsWarm(t *testing.T) {
	dir := t.TempDir()
	p := producerPipeline(t, dir)
	if eps := predictionsOf(t, p); eps[0].Prediction.Valid {
		t.Fatalf("a cold producer predicted: %+v", eps[0].Prediction)
	}
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	res, err := p.Observe(context.Background(), latencySamples(400, at))
	if err != nil || res.Accepted != 400 {
		t.Fatalf("Observe: %+v, %v", res, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for res.Stats == nil || res.Stats.ModelVersion == 0 { // training runs in the background
		if time.Now().After(deadline) {
			t.Fatalf("no model after 20 s: %+v", res.Stats)
		}
		time.Sleep(20 * time.Millisecond)
		if res, err = p.Observe(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	before := predictionsOf(t, p)
	if !before[0].Prediction.Valid || before[0].Prediction.TTFTMs < 40 || before[0].Prediction.TTFTMs > 90 {
		t.Fatalf("trained prediction %+v, want about 20 + 0.05 · 1000 = 70 ms", before[0].Prediction)
	}

	producer := plugin(t, p, "predictor")
	old := producer.Status()
	if err := syscall.Kill(old.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for st := producer.Status(); !st.Up || st.PID == old.PID; st = producer.Status() {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("the producer did not restart: %+v", st)
		}
		p.Run(context.Background(), &sdk.Cycle{Request: sdk.Request{ID: "x"}, Endpoints: []sdk.Endpoint{{ID: "a"}}}) // notices the death
		time.Sleep(5 * time.Millisecond)
	}
	after := predictionsOf(t, p) // the first cycle the new process serves
	for i := range before {
		if after[i].Prediction != before[i].Prediction {
			t.Errorf("endpoint %s: %+v after the restart, %+v before", before[i].ID, after[i].Prediction, before[i].Prediction)
		}
	}
}
