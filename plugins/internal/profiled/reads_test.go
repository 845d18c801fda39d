package profiled

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles the predictions must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	p := New()
	if err := p.Configure(profiles(t, nil)); err != nil {
		t.Fatal(err)
	}
	sdktest.CheckReads(t, p.Reads(), 5000, func(c *sdk.Cycle) ([]sdk.Prediction, error) {
		return p.Produce(context.Background(), c)
	})
}
