package pipeline_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// countingProducer counts the samples it is sent.
type countingProducer struct {
	testProducer
	samples *atomic.Int64
}

func (p countingProducer) Observe(_ context.Context, s []sdk.Sample) (sdk.ObserveResult, error) {
	p.samples.Add(int64(len(s)))
	return sdk.ObserveResult{Accepted: len(s)}, nil
}

// TestObserveUnseen: the profiles of a router share a producer; each batch reaches it once.
func TestObserveUnseen(t *testing.T) {
	var n atomic.Int64
	p := build(t, "1s", stageSpec{name: "predictor", stage: sdk.StageProducer, impl: countingProducer{samples: &n}})
	seen := map[*pluginhost.Plugin]bool{}
	batch := make([]sdk.Sample, 3)
	res, observed, err := p.ObserveUnseen(context.Background(), batch, seen)
	if err != nil || !observed || res.Accepted != 3 || n.Load() != 3 {
		t.Fatalf("first: %+v, observed %v, %v; producer got %d", res, observed, err, n.Load())
	}
	// The same producer in another profile's pipeline: already seen, not sent again.
	if _, observed, err := p.ObserveUnseen(context.Background(), batch, seen); observed || err != nil || n.Load() != 3 {
		t.Errorf("second: observed %v, %v; producer got %d samples, want 3", observed, err, n.Load())
	}
	// A pipeline without a producer observes nothing; Observe says why.
	noProducer := build(t, "1s", picker("pick", nil))
	if _, observed, _ := noProducer.ObserveUnseen(context.Background(), batch, seen); observed {
		t.Error("a pipeline without a producer observed")
	}
	if _, err := noProducer.Observe(context.Background(), batch); !errors.Is(err, pipeline.ErrNoProducer) {
		t.Errorf("Observe without a producer: %v", err)
	}
}

// TestBuildRefusesProfiles: a config of profiles is built one profile at a time.
func TestBuildRefusesProfiles(t *testing.T) {
	cfg, err := config.Parse("profiles.yaml", []byte(`
plugins: [{name: pick, type: max-score-picker}]
profiles:
  - {name: one, pipeline: {picker: {pluginRef: pick}}}
  - {name: two, pipeline: {picker: {pluginRef: pick}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Build(context.Background(), cfg, zerolog.Nop()); err == nil {
		t.Fatal("Build accepted a config of two profiles")
	}
	p, err := pipeline.Build(context.Background(), cfg.ForProfile("two"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Profile() != "two" {
		t.Errorf("profile %q, want two", p.Profile())
	}
}
