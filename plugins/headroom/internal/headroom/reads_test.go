package headroom

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles the decision must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	f := New()
	if err := f.Configure([]byte(`{"epsilonExploreNeg": 0.3}`)); err != nil {
		t.Fatal(err)
	}
	sdktest.CheckReads(t, f.Reads(), 5000, func(c *sdk.Cycle) (sdk.FilterVerdict, error) {
		return f.Filter(context.Background(), c)
	})
}
