package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStagesFromTraces(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s, err := NewStages(reg, func() []*pluginhost.Plugin { return nil })
	if err != nil {
		t.Fatal(err)
	}
	tr := &pipeline.Trace{
		Profile:  "default",
		Producer: &pipeline.StageTrace{Stage: sdk.StageProducer, Plugin: "predictor", Duration: 300 * time.Microsecond},
		Filters: []pipeline.StageTrace{{Stage: sdk.StageFilter, Plugin: "affinity", Duration: time.Millisecond, Fallback: "deadline exceeded"},
			{Stage: sdk.StageFilter, Plugin: "headroom", Duration: 100 * time.Microsecond}},
		Picker: &pipeline.StageTrace{Stage: sdk.StagePicker, Plugin: "picker", Duration: 80 * time.Microsecond},
	}
	// A crashed plugin's transport errors name its socket, a new random path per process: the
	// series is reason="transport" whatever the path, never one series per path.
	for _, socket := range []string{"/tmp/plugin3920148", "/tmp/plugin771023"} {
		s.ObserveStage("default", &pipeline.StageTrace{Stage: sdk.StageScorer, Plugin: "scorer", Fallback: "transport: connection error: desc = " +
			`"transport: error while dialing: dial unix ` + socket + `: connect: connection refused"`})
	}
	s.Observe(tr)
	s.Observe(tr)
	// The same stages in another profile: series of their own.
	slo := *tr
	slo.Profile = "slo"
	s.Observe(&slo)
	want := `
# HELP foresight_stage_fallbacks_total Cycles where a stage's fallback replaced its plugin's answer, by scheduling profile and reason.
# TYPE foresight_stage_fallbacks_total counter
foresight_stage_fallbacks_total{profile="default",reason="timeout",stage="filter"} 2
foresight_stage_fallbacks_total{profile="default",reason="transport",stage="scorer"} 2
foresight_stage_fallbacks_total{profile="slo",reason="timeout",stage="filter"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foresight_stage_fallbacks_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(s.duration); n != 9 {
		t.Errorf("%d duration series, want one per (profile, stage, plugin): 2 × 4, and the scorer's", n)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}
