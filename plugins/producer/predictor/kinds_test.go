package predictor

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// A producer learns an endpoint's kind from its accelerator label (speedLabel) in the cycles it
// predicts, and a new endpoint of a known kind starts at that kind's speed: after samples from an
// h100 and from an a100 twice as slow, a new a100 is predicted about twice as slow as a new h100
// on the same state (1.9: the kinds' factors are shrunk toward the fleet's), where without the
// label both start at the fleet's speed; with speedLabel "" the labels are ignored.
func TestNewEndpointsStartAtTheirKindsSpeed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kindsOff bool
		want     float64
	}{{"accelerator label", false, 1.9}, {"kinds off", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			p := New()
			params := map[string]any{"minNewSamples": 100000, "youngRows": 0}
			if tc.kindsOff {
				params["speedLabel"] = ""
			}
			configure(t, p, params)
			at := func(id, kind string) sdk.Endpoint {
				return sdk.Endpoint{ID: id, Labels: map[string]string{"accelerator": kind}}
			}
			rng := rand.New(rand.NewPCG(41, 42))
			c := cycle(rng, 2, t0)
			c.Endpoints[0], c.Endpoints[1] = at("h", "h100"), at("a", "a100")
			if _, err := p.Produce(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			for range 6 {
				batch := samples(rng, 100, t0, nil)
				for i := range batch {
					if i%2 == 1 {
						batch[i].EndpointID = "a"
						batch[i].ActualTTFTMs *= 2
						batch[i].ActualTPOTMs *= 2
					} else {
						batch[i].EndpointID = "h"
					}
				}
				observe(t, p, batch)
			}
			probe := cycle(rng, 2, t0)
			probe.Endpoints[0], probe.Endpoints[1] = at("new-h", "h100"), at("new-a", "a100")
			probe.Endpoints[1].State = probe.Endpoints[0].State
			got, err := p.Produce(context.Background(), probe)
			if err != nil {
				t.Fatal(err)
			}
			if r := got[1].TTFTMs / got[0].TTFTMs; math.Abs(r-tc.want) > 0.06 {
				t.Errorf("new a100 %.2f ms, new h100 %.2f ms: ratio %.3f, want %.2f", got[1].TTFTMs, got[0].TTFTMs, r, tc.want)
			}
		})
	}
}
