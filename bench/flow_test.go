package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/sim/workload"
)

func TestStrategyFlow(t *testing.T) {
	base, fc, err := strategyFlow("least-load+fc")
	if err != nil || base != "least-load" || fc == nil {
		t.Fatalf("least-load+fc: %q %v %v", base, fc, err)
	}
	def := config.DefaultFlowControl()
	if fc.Queue.Policy != def.Policy || fc.Detector.QueueDepth != def.Detector.QueueDepth || fc.Detector.Predictions {
		t.Errorf("+fc runs %+v / %+v, want the defaults", fc.Queue, fc.Detector)
	}
	// The header and user keys take the simulated request's class for its tenant.
	if got := fc.Flow(&workload.Request{Class: "a", SessionID: "s"}); got != "a" {
		t.Errorf("flow key %q, want the class", got)
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
	if err != nil || base != file || fc == nil || fc.Detector.QueueDepth != 7 {
		t.Fatalf("%s: %q %+v %v", file, base, fc, err)
	}
	if got := fc.Flow(&workload.Request{Class: "a", SessionID: "s"}); got != "s" {
		t.Errorf("flow key %q, want the session", got)
	}
}
