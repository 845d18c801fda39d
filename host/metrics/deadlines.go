package metrics

import (
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/prometheus/client_golang/prometheus"
)

// Deadlines reads every slot's current stage deadline at scrape time:
//
//	foresight_stage_deadline_seconds{profile,stage,plugin}   the deadline of the slot's next call
//
// It is the deadline before a request's TTFT objective bounds it (pipeline.Stats.Deadline):
// adapted to the slot's round trips between pipeline.stageTimeout and stageTimeoutMax, or the
// plugin's fixed timeout.
type Deadlines struct {
	stats func() []pipeline.Stats
	desc  *prometheus.Desc
}

// NewDeadlines registers the deadline gauge with reg; stats is called at every scrape
// (router.Pipelines.Stats: every profile's slots).
func NewDeadlines(reg prometheus.Registerer, stats func() []pipeline.Stats) (*Deadlines, error) {
	d := &Deadlines{stats: stats, desc: prometheus.NewDesc("foresight_stage_deadline_seconds",
		"The deadline of a stage's next call, adapted to its round trips (before a request's TTFT objective bounds it).",
		[]string{"profile", "stage", "plugin"}, nil)}
	return d, reg.Register(d)
}

// Describe sends the gauge's description.
func (d *Deadlines) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// Collect sends one value per (profile, stage, plugin): a plugin in two slots of one stage has
// one deadline per slot, and the first is shown.
func (d *Deadlines) Collect(ch chan<- prometheus.Metric) {
	type key struct{ profile, stage, plugin string }
	seen := map[key]bool{}
	for _, s := range d.stats() {
		k := key{s.Profile, s.Stage.String(), s.Plugin}
		if seen[k] {
			continue
		}
		seen[k] = true
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, s.Deadline.Seconds(), k.profile, k.stage, k.plugin)
	}
}
