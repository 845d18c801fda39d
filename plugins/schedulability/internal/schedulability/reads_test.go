package schedulability

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles (some endpoints labelled
// foresight.io/schedulable false or true) the verdict must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	f := New()
	sdktest.CheckReads(t, f.Reads(), 5000, func(c *sdk.Cycle) (sdk.FilterVerdict, error) {
		return f.Filter(context.Background(), c)
	})
}
