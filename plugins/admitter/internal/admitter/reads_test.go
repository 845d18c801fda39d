package admitter

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles the decision must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	for _, params := range []string{`{"mode": "headroom"}`, `{"mode": "budget"}`, `{"mode": "queue-depth", "queueBounds": {"-1": 20}}`,
		`{"mode": "queue-depth", "queueSource": "inflight", "queueOf": "min", "queueBounds": {"-1": 5}}`,
		`{"mode": "budget", "prefixGroupFloor": 0.5}`} {
		// The floor keeps state: CheckReads decides each cycle in full, then projected, so two
		// instances take turns, one seeing every full cycle and the other every projection, in
		// the same order.
		var pair [2]*Admitter
		for i := range pair {
			pair[i] = New()
			if err := pair[i].Configure([]byte(params)); err != nil {
				t.Fatal(err)
			}
		}
		calls := 0
		sdktest.CheckReads(t, pair[0].Reads(), 5000, func(c *sdk.Cycle) (sdk.AdmitVerdict, error) {
			calls++
			return pair[calls%2].Admit(context.Background(), c)
		})
	}
}

// AdmitsUnsheddable lets the host admit requests of priority 0 or above without a call: in every
// mode that declares it, random cycles of those priorities are admitted whatever else they carry,
// and with the prefix group floor (which counts them in their group's window) it is not declared.
func TestAdmitsUnsheddableHoldsInEveryMode(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 44))
	for _, tc := range []struct {
		params string
		want   bool
	}{
		{`{"mode": "headroom"}`, true},
		{`{"mode": "budget", "budgetsMs": {"-1": 1}}`, true},
		{`{"mode": "queue-depth", "queueBounds": {"-1": 0}}`, true},
		{`{"mode": "headroom", "prefixGroupFloor": 0.5}`, false},
	} {
		a := New()
		if err := a.Configure([]byte(tc.params)); err != nil {
			t.Fatal(err)
		}
		if got := a.AdmitsUnsheddable(); got != tc.want {
			t.Errorf("%s: AdmitsUnsheddable() = %v, want %v", tc.params, got, tc.want)
		}
		if !tc.want {
			continue
		}
		for range 2000 {
			c := sdktest.RandomCycle(rng)
			c.Request.Priority = int32(rng.IntN(3))
			if v, err := a.Admit(context.Background(), c); err != nil || !v.Admitted {
				t.Fatalf("%s: priority %d: %+v, %v; want admitted", tc.params, c.Request.Priority, v, err)
			}
		}
	}
}
