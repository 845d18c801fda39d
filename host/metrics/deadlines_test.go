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

// TestDeadlines: every slot's current deadline is a gauge, read at scrape time; a plugin in two
// slots of one stage shows its first slot's.
func TestDeadlines(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	stats := []pipeline.Stats{
		{Profile: "default", Plugin: "predictor", Stage: sdk.StageProducer, Deadline: 25 * time.Millisecond},
		{Profile: "default", Plugin: "headroom", Stage: sdk.StageFilter, Deadline: 60 * time.Millisecond},
		{Profile: "default", Plugin: "headroom", Stage: sdk.StageFilter, Deadline: 30 * time.Millisecond},
		{Profile: "slo", Plugin: "predictor", Stage: sdk.StageProducer, Deadline: 100 * time.Millisecond},
	}
	if _, err := NewDeadlines(reg, func() []pipeline.Stats { return stats }); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP foresight_stage_deadline_seconds The deadline of a stage's next call, adapted to its round trips (before a request's TTFT objective bounds it).
# TYPE foresight_stage_deadline_seconds gauge
foresight_stage_deadline_seconds{plugin="headroom",profile="default",stage="filter"} 0.06
foresight_stage_deadline_seconds{plugin="predictor",profile="default",stage="producer"} 0.025
foresight_stage_deadline_seconds{plugin="predictor",profile="slo",stage="producer"} 0.1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foresight_stage_deadline_seconds"); err != nil {
		t.Error(err)
	}
}

// TestProducerDegraded: a cycle whose producer failed counts once under the level that stood in
// for it; one whose producer answered does not count.
func TestProducerDegraded(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s, err := NewStages(reg, func() []*pluginhost.Plugin { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []string{"", pipeline.DegradeReused, pipeline.DegradeReused, pipeline.DegradePrior, pipeline.DegradeNone} {
		st := &pipeline.StageTrace{Stage: sdk.StageProducer, Plugin: "predictor", Degraded: level}
		if level != "" {
			st.Fallback = "deadline exceeded"
		}
		s.Observe(&pipeline.Trace{Profile: "default", Producer: st})
	}
	want := `
# HELP foresight_producer_degraded_total Cycles whose producer failed, by scheduling profile and where their predictions came from instead: reused, prior or none.
# TYPE foresight_producer_degraded_total counter
foresight_producer_degraded_total{level="none",profile="default"} 1
foresight_producer_degraded_total{level="prior",profile="default"} 1
foresight_producer_degraded_total{level="reused",profile="default"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foresight_producer_degraded_total"); err != nil {
		t.Error(err)
	}
}
