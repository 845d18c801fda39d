package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// foresight_endpoint_slots is reported only with flow control on (Slots ≥ 0): 0 for an endpoint
// whose slots its detector does not know.
func TestEndpointSlots(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	gauges := []EndpointGauges{{ID: "a", Slots: 32}, {ID: "b"}, {ID: "c", Slots: -1}}
	if _, err := NewEndpoints(reg, func() []EndpointGauges { return gauges }); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP foresight_endpoint_slots With flow control on: the requests its saturation detector believes the endpoint runs at once (0: unknown).
# TYPE foresight_endpoint_slots gauge
foresight_endpoint_slots{endpoint="a"} 32
foresight_endpoint_slots{endpoint="b"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foresight_endpoint_slots"); err != nil {
		t.Error(err)
	}
}
