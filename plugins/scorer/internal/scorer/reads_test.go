package scorer

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/sdktest"
)

// The host sends only the fields Reads declares: on random cycles the decision must not change.
func TestReadsCoverWhatItReads(t *testing.T) {
	for _, strategy := range []string{"least", "most"} {
		s := New()
		if err := s.Configure([]byte(`{"headroomSelectionStrategy": "` + strategy + `"}`)); err != nil {
			t.Fatal(err)
		}
		sdktest.CheckReads(t, s.Reads(), 5000, func(c *sdk.Cycle) ([]float64, error) {
			return s.Score(context.Background(), c)
		})
	}
}
