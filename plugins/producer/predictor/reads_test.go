package predictor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// TestReadsDeclaresWhatTheProducerReads: a producer whose prior learned endpoints of different
// speeds predicts the same from the fields it declares as from the whole cycle. Without
// "endpoints.ids" in its Reads, a plugin producer got no endpoint IDs and predicted every
// endpoint at the fleet's speed (producer 3.1.0 and earlier).
func TestReadsDeclaresWhatTheProducerReads(t *testing.T) {
	p := New()
	configure(t, p, map[string]any{"trainInline": true})
	rng := rand.New(rand.NewPCG(3, 4))
	for b := range 20 {
		batch := samples(rng, 100, t0.Add(time.Duration(b)*time.Second), nil)
		for i := range batch {
			k := i % 4 // the IDs of sdktest's random cycles; the odd ones three times as slow
			batch[i].EndpointID = fmt.Sprintf("vllm-%d:8000", k)
			if k%2 == 1 {
				batch[i].ActualTTFTMs *= 3
				batch[i].ActualTPOTMs *= 3
			}
		}
		if _, err := p.Observe(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	sdktest.CheckReads(t, p.Reads(), 500, func(c *sdk.Cycle) ([]sdk.Prediction, error) {
		return p.Produce(context.Background(), c)
	})
}
