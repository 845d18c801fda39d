package lowest

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles the decision must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	for _, metric := range []string{MetricTTFT, MetricTPOT} {
		p := New()
		if err := p.Configure([]byte(`{"metric":"` + metric + `"}`)); err != nil {
			t.Fatal(err)
		}
		sdktest.CheckReads(t, p.Reads(), 5000, func(c *sdk.Cycle) ([]int, error) {
			return p.Pick(context.Background(), c, make([]float64, len(c.Endpoints)))
		})
	}
}
