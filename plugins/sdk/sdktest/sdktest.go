// Package sdktest helps test stage plugins: random cycles that exercise every field, and a check
// that a stage's Reads declaration covers everything it reads.
package sdktest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// RandomCycle returns a cycle whose every field is set from rng: 1–8 endpoints with random state,
// mostly valid predictions, a request with or without SLOs, streaming or not, sometimes sheddable;
// endpoints in zones z0–z2 (label topology.kubernetes.io/zone, sometimes missing), sometimes
// labelled foresight.io/schedulable, and 0–3 excluded endpoints of the same zones.
func RandomCycle(rng *rand.Rand) *sdk.Cycle {
	c := &sdk.Cycle{
		Request: sdk.Request{
			ID: fmt.Sprint("r", rng.IntN(1000)), Model: "m", InputTokens: rng.Int64N(8000),
			MaxOutputTokens: rng.Int64N(1000), Streaming: rng.IntN(2) == 0,
			Priority: int32(rng.IntN(3)) - 1, SessionID: "s", PrefixBlockHashes: []uint64{rng.Uint64()},
			Labels: map[string]string{"tenant": "t"},
		},
		Now:  time.Unix(1_700_000_000+rng.Int64N(1000), 0).UTC(),
		Seed: rng.Uint64(),
	}
	if rng.IntN(4) > 0 {
		c.Request.SLO.TTFTMs = 100 + 1900*rng.Float64()
	}
	if rng.IntN(3) > 0 {
		c.Request.SLO.TPOTMs = 10 + 60*rng.Float64()
	}
	for i := range 1 + rng.IntN(8) {
		e := sdk.Endpoint{
			ID:     fmt.Sprintf("vllm-%d:8000", i),
			Labels: map[string]string{"role": "decode"},
			State: sdk.EndpointState{
				KVCacheUsage: rng.Float64(), Waiting: rng.Int64N(20), Running: rng.Int64N(64),
				InflightRequests: rng.Int64N(3) * rng.Int64N(30), PrefillTokensInFlight: rng.Int64N(9000),
				DecodeTokensInFlight: rng.Int64N(30000), PrefixMatch: float64(rng.IntN(5)) / 4,
				MetricsAgeMs: rng.Float64() * 60, DispatchedSinceScrape: rng.Int64N(2) * rng.Int64N(12),
				// From the index rather than rng, so that the draws of the fields before it keep
				// their values: 0 (unknown) on the first endpoint, else 2.5–47.5 a second.
				FirstTokenRate: float64((i*7)%20) * 2.5,
				// Likewise: 0 (none decoding yet) on every fifth endpoint, else 11, 22, 33 or 44 ms.
				RunningTPOTMs: float64((i*3)%5) * 11,
			},
		}
		if rng.IntN(3) == 0 {
			e.State.MinRunningTPOTSLOMs = 20 + 40*rng.Float64()
		}
		if rng.IntN(8) > 0 {
			e.Prediction = sdk.Prediction{Valid: true, TTFTMs: 20 + 3000*rng.Float64(), TPOTMs: 5 + 80*rng.Float64()}
		}
		c.Endpoints = append(c.Endpoints, e)
	}
	// Drawn after everything above, so the cycles a seed gave before these fields existed keep
	// their other fields.
	zone := func(labels map[string]string) {
		if z := rng.IntN(4); z < 3 {
			labels["topology.kubernetes.io/zone"] = fmt.Sprint("z", z)
		}
	}
	for i := range c.Endpoints {
		zone(c.Endpoints[i].Labels)
		if s := rng.IntN(6); s < 2 {
			c.Endpoints[i].Labels["foresight.io/schedulable"] = []string{"false", "true"}[s]
		}
	}
	for i := range rng.IntN(4) {
		x := sdk.ExcludedEndpoint{ID: fmt.Sprintf("vllm-x%d:8000", i), Labels: map[string]string{},
			Reason: []string{sdk.ExcludedUnhealthy, sdk.ExcludedEjected}[rng.IntN(2)]}
		zone(x.Labels)
		c.Excluded = append(c.Excluded, x)
	}
	return c
}

// CheckReads runs decide on n random cycles, each in full and as a stage declaring reads would
// receive it (transport.ProjectCycle), and fails the test where the two answers differ: the
// declaration misses a field the stage reads.
func CheckReads[T any](t *testing.T, reads []string, n int, decide func(*sdk.Cycle) (T, error)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		c := RandomCycle(rng)
		projected, err := transport.ProjectCycle(c, reads)
		if err != nil {
			t.Fatalf("reads %q: %v", reads, err)
		}
		full, errFull := decide(c)
		part, errPart := decide(projected)
		if !reflect.DeepEqual(full, part) || (errFull == nil) != (errPart == nil) {
			t.Fatalf("cycle %d: the stage decides differently on the fields it declares (reads %q):\nfull:      %+v, %v\nprojected: %+v, %v",
				i, reads, full, errFull, part, errPart)
		}
	}
}

// CheckRate runs hit for seeds 0 … n−1 and fails the test unless the share of hits is within tol
// of want: a stage's random choice (exploration, say) drawn from the cycle seed happens as often
// as its parameter says.
func CheckRate(t *testing.T, n int, want, tol float64, hit func(seed uint64) (bool, error)) {
	t.Helper()
	hits := 0
	for seed := range uint64(n) {
		ok, err := hit(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if ok {
			hits++
		}
	}
	if rate := float64(hits) / float64(n); rate < want-tol || rate > want+tol {
		t.Errorf("%d of %d seeds (%.4f), want %.4f ± %.4f", hits, n, rate, want, tol)
	}
}
