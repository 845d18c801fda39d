package predictor

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// busierLooksFaster trains a producer on samples whose TPOT falls by 0.1 ms for every request in
// flight (what a router that sends the most requests where TPOT turns out lowest shows its
// producer), with the monotone parameter as given, and returns the TPOT it predicts for one
// request on one endpoint state with 0, 1, … 39 requests in flight.
func busierLooksFaster(t *testing.T, monotone bool) []float64 {
	t.Helper()
	p := New()
	configure(t, p, map[string]any{"trainInline": true, "monotone": monotone})
	rng := rand.New(rand.NewPCG(3, 4))
	for b := range 40 {
		at := t0.Add(time.Duration(b) * time.Second)
		batch := make([]sdk.Sample, 100)
		for i := range batch {
			r, s := randomState(rng)
			r.ID = strconv.FormatUint(rng.Uint64(), 36)
			ttft, tpot := truth(&r, &s)
			tpot = max(tpot-0.1*float64(s.InflightRequests), 1)
			batch[i] = sdk.Sample{Request: r, EndpointID: "e", State: s, OutputTokens: 200,
				ActualTTFTMs: ttft, ActualTPOTMs: tpot * (1 + 0.02*rng.NormFloat64()),
				DispatchedAt: at.Add(time.Duration(i) * 10 * time.Millisecond)}
		}
		if _, err := p.Observe(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	r, s := randomState(rng)
	c := &sdk.Cycle{Now: t0.Add(41 * time.Second), Request: r, Endpoints: make([]sdk.Endpoint, 40)}
	for i := range c.Endpoints {
		c.Endpoints[i].ID, c.Endpoints[i].State = "e", s
		c.Endpoints[i].State.InflightRequests = int64(i)
	}
	preds, err := p.Produce(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(preds))
	for i, pr := range preds {
		if !pr.Valid || !(pr.TPOTMs > 0) {
			t.Fatalf("no TPOT prediction with %d in flight: %+v", i, pr)
		}
		out[i] = pr.TPOTMs
	}
	return out
}

// falls reports whether some prediction is lower than the one before it.
func falls(v []float64) bool {
	for i := 1; i < len(v); i++ {
		if v[i] < v[i-1]-1e-9 {
			return true
		}
	}
	return false
}

func TestMonotoneTreesNeverPredictBusierFaster(t *testing.T) {
	if free := busierLooksFaster(t, false); !falls(free) {
		t.Fatalf("without the constraint the TPOT should follow the samples down with the load: %.2f", free)
	}
	held := busierLooksFaster(t, true)
	if falls(held) {
		t.Errorf("with monotone, TPOT falls as requests in flight grow: %.2f", held)
	}
}
