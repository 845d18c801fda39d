package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFlowControlCountsAndGauges(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	f, err := NewFlowControl(reg)
	if err != nil {
		t.Fatal(err)
	}
	f.Queued(0, 3, 1200)
	f.Queued(-1, 1, 100)
	f.Queued(0, 2, 800) // a gauge: the last value stands
	f.WaitingRoom(2)
	f.Dispatched(0, "tenant-a", 40*time.Millisecond)
	f.Dispatched(0, "tenant-a", 2*time.Second)
	f.Shed(-1, "ttl-expired")
	f.Shed(-1, "ttl-expired")
	f.Shed(0, "client-gone")
	want := `
# HELP foresight_flow_dispatched_total Requests dispatched from the router's queue, by priority band.
# TYPE foresight_flow_dispatched_total counter
foresight_flow_dispatched_total{band="0"} 2
# HELP foresight_flow_queue_bytes Bytes of the request bodies waiting in the router's queue, by priority band.
# TYPE foresight_flow_queue_bytes gauge
foresight_flow_queue_bytes{band="-1"} 100
foresight_flow_queue_bytes{band="0"} 800
# HELP foresight_flow_queue_requests Requests waiting in the router's queue, by priority band.
# TYPE foresight_flow_queue_requests gauge
foresight_flow_queue_requests{band="-1"} 1
foresight_flow_queue_requests{band="0"} 2
# HELP foresight_flow_shed_total Requests that left the router's queue without dispatch, by priority band and reason.
# TYPE foresight_flow_shed_total counter
foresight_flow_shed_total{band="-1",reason="ttl-expired"} 2
foresight_flow_shed_total{band="0",reason="client-gone"} 1
# HELP foresight_flow_waiting_room_requests Requests waiting for the pool to have an endpoint at all (flowControl.noEndpointsTTL).
# TYPE foresight_flow_waiting_room_requests gauge
foresight_flow_waiting_room_requests 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foresight_flow_dispatched_total", "foresight_flow_queue_bytes",
		"foresight_flow_queue_requests", "foresight_flow_shed_total", "foresight_flow_waiting_room_requests"); err != nil {
		t.Error(err)
	}
	// Two waits of one band and flow: one series, count 2.
	if n := testutil.CollectAndCount(f.wait); n != 1 {
		t.Errorf("%d wait series, want 1", n)
	}
	if _, err := NewFlowControl(reg); err == nil {
		t.Error("registering the flow control metrics twice succeeded")
	}
}

// The wait histogram keeps the first MaxFlowLabels flows by name; the 65th and later share
// "other", and a flow that had its own label keeps it.
func TestFlowControlBoundsTheFlowLabel(t *testing.T) {
	f, err := NewFlowControl(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for i := range MaxFlowLabels + 10 {
		f.Dispatched(0, fmt.Sprintf("flow-%d", i), time.Millisecond)
	}
	f.Dispatched(0, "flow-3", time.Millisecond)
	// 64 named series + 1 "other" (holding the last 10).
	if n := testutil.CollectAndCount(f.wait); n != MaxFlowLabels+1 {
		t.Errorf("%d wait series, want %d", n, MaxFlowLabels+1)
	}
	if got := f.flowLabel("flow-3"); got != "flow-3" {
		t.Errorf("flow-3 is labelled %q, want its own name", got)
	}
	if got := f.flowLabel("flow-70"); got != OtherFlow {
		t.Errorf("flow-70 is labelled %q, want %q", got, OtherFlow)
	}
}
