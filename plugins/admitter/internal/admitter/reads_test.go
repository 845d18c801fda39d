package admitter

import (
	"context"
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
