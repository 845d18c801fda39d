package transport

import (
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// testCycle returns a cycle with every field set (the sdk package's round-trip tests use the same).
func testCycle(id string) *sdk.Cycle {
	return &sdk.Cycle{
		Request: sdk.Request{
			ID: id, Model: "llama", InputTokens: 900, MaxOutputTokens: 128, Streaming: true,
			SLO: sdk.SLO{TTFTMs: 500, TPOTMs: 50}, Priority: -1, SessionID: "s1",
			PrefixBlockHashes: []uint64{1, 2, 3}, Labels: map[string]string{"tenant": "a"},
			Disaggregation: sdk.Disaggregation{Hop: sdk.HopPrefill, DecodeEndpoint: "b:2", DecodeTTFTMs: 31.5, DecodeTPOTMs: 9.25},
		},
		Endpoints: []sdk.Endpoint{
			{ID: "a:1", State: sdk.EndpointState{KVCacheUsage: 0.25, Waiting: 3, Running: 4, InflightRequests: 5,
				PrefillTokensInFlight: 600, DecodeTokensInFlight: 700, PrefixMatch: 0.5, MinRunningTPOTSLOMs: 40, MetricsAgeMs: 12, LastOutputAgeMs: 7.5,
				DispatchedSinceScrape: 2}},
			{ID: "b:2", Labels: map[string]string{"role": "decode"}, State: sdk.EndpointState{KVCacheUsage: 0.75, Waiting: 1, PrefixMatch: 1},
				Prediction: sdk.Prediction{Valid: true, TTFTMs: 80, TPOTMs: 9}},
		},
		Now:  time.Date(2026, 11, 22, 1, 2, 3, 4000, time.UTC),
		Seed: 42,
		Excluded: []sdk.ExcludedEndpoint{
			{ID: "c:3", Labels: map[string]string{"topology.kubernetes.io/zone": "z1"}, Reason: sdk.ExcludedUnhealthy},
			{ID: "d:4", Reason: sdk.ExcludedEjected},
		},
	}
}
