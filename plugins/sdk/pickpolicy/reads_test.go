package pickpolicy

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles the decision must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	for _, strategy := range []string{"proportional", "softmax", "argmax"} {
		p := New()
		if err := p.Configure([]byte(`{"strategy": "` + strategy + `"}`)); err != nil {
			t.Fatal(err)
		}
		sdktest.CheckReads(t, p.Reads(), 5000, func(c *sdk.Cycle) ([]int, error) {
			scores := make([]float64, len(c.Endpoints))
			for i := range scores {
				scores[i] = float64((int(c.Seed)+7*i)%10) / 10
			}
			return p.Pick(context.Background(), c, scores)
		})
	}
}
