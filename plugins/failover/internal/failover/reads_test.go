package failover

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles (endpoints in zones z0–z2, some
// without a zone, and up to three excluded endpoints of those zones) the verdict must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	f := New()
	sdktest.CheckReads(t, f.Reads(), 5000, func(c *sdk.Cycle) (sdk.FilterVerdict, error) {
		return f.Filter(context.Background(), c)
	})
}
