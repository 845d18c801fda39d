package admitter

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles the decision must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	for _, mode := range []string{"headroom", "budget"} {
		a := New()
		if err := a.Configure([]byte(`{"mode": "` + mode + `"}`)); err != nil {
			t.Fatal(err)
		}
		sdktest.CheckReads(t, a.Reads(), 5000, func(c *sdk.Cycle) (sdk.AdmitVerdict, error) {
			return a.Admit(context.Background(), c)
		})
	}
}
