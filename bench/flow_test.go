package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/workload"
)

// queueRoom is the room fc's detector sees on one endpoint with fresh gauges and waiting
// requests queued.
func queueRoom(fc *cluster.FlowControl, waiting int64) int {
	v, _ := fc.Stages.Detect(context.Background(), &sdk.Cycle{Endpoints: []sdk.Endpoint{
		{State: sdk.EndpointState{Waiting: waiting, InflightRequests: waiting, MetricsAgeMs: 10}}}})
	return v.Room[0]
}

func TestStrategyFlow(t *testing.T) {
	base, fc, err := strategyFlow("least-load+fc")
	if err != nil || base != "least-load" || fc == nil {
		t.Fatalf("least-load+fc: %q %v %v", base, fc, err)
	}
	// The defaults: slo-feasible (a request with an objective is hopeless after its deadline), a
	// state detector (asked before the pipeline) with queue depth 2.
	if k, _ := fc.Stages.Order(context.Background(), &sdk.Cycle{Now: time.Unix(1, 0), Request: sdk.Request{SLO: sdk.SLO{TTFTMs: 100}}}); !k.HopelessAfter.Equal(time.Unix(1, 1e8)) {
		t.Errorf("+fc orders with %+v, want slo-feasible's key", k)
	}
	if !fc.Stages.DetectsBefore(&sdk.Request{}) || queueRoom(fc, 2) != 1 || queueRoom(fc, 3) != 0 {
		t.Errorf("+fc detector: before %t, room at queue 2: %d, at 3: %d; want a state detector of depth 2",
			fc.Stages.DetectsBefore(&sdk.Request{}), queueRoom(fc, 2), queueRoom(fc, 3))
	}
	// The header and user keys take the simulated request's class for its tenant.
	if got := fc.Flow(&workload.Request{Class: "a", SessionID: "s"}); got != "a" {
		t.Errorf("flow key %q, want the class", got)
	}
	if fc.AllCandidates {
		t.Error("+fc leaves the router every endpoint; want only those with room")
	}
	if base, all, err := strategyFlow("least-load+fc-all"); err != nil || base != "least-load" || all == nil || !all.AllCandidates {
		t.Errorf("least-load+fc-all: %q %+v %v, want flow control with every endpoint a candidate", base, all, err)
	}
	if base, fc, err := strategyFlow("least-load"); err != nil || base != "least-load" || fc != nil {
		t.Errorf("least-load: %q %v %v, want no flow control", base, fc, err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "fc.yaml")
	yaml := "plugins:\n  - {name: pick, type: max-score-picker}\npipeline:\n  picker: {pluginRef: pick}\n" +
		"flowControl:\n  enabled: true\n  flowKey: session\n  detector: {queueDepth: 7}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	base, fc, err = strategyFlow(file)
	if err != nil || base != file || fc == nil || queueRoom(fc, 7) != 1 {
		t.Fatalf("%s: %q %+v %v", file, base, fc, err)
	}
	if got := fc.Flow(&workload.Request{Class: "a", SessionID: "s"}); got != "s" {
		t.Errorf("flow key %q, want the session", got)
	}
}
