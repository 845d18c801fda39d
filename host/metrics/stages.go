package metrics

import (
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/prometheus/client_golang/prometheus"
)

// stageBuckets span 50 µs to ~0.8 s, doubling: a stage call from an in-process built-in to a
// plugin at its deadline.
var stageBuckets = prometheus.ExponentialBuckets(50e-6, 2, 15)

// Stages are the pipeline's per-stage metrics:
//
//	foresight_stage_duration_seconds{profile,stage,plugin}   one stage call within a cycle, fallbacks included
//	foresight_stage_fallbacks_total{profile,stage,reason}    cycles where the stage's fallback replaced the plugin's answer
//
// reason is one of a fixed set (pipeline.FallbackLabel: timeout, unavailable, transport,
// stage_error, invalid_answer); the error's text is in the trace and the log.
//
//	foresight_producer_degraded_total{profile,level}         cycles whose failed producer was stood in for
//
// level is pipeline.DegradeReused, DegradePrior or DegradeNone (StageTrace.Degraded).
//
// profile is the scheduling profile whose pipeline ran the cycle (pipeline.Trace.Profile):
// profiles that share a plugin share its process, not its series.
//
//	foresight_plugin_restarts_total{plugin}          restarts of a plugin process after it exited
//	foresight_plugin_up{plugin}                      1 while the plugin (process or built-in) serves
type Stages struct {
	duration  *prometheus.HistogramVec
	fallbacks *prometheus.CounterVec
	degraded  *prometheus.CounterVec
}

// NewStages returns the stage metrics, registered with reg; plugins is called at every scrape
// for the restart and up gauges (pipeline.Pipeline.Plugins).
func NewStages(reg prometheus.Registerer, plugins func() []*pluginhost.Plugin) (*Stages, error) {
	s := &Stages{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "foresight_stage_duration_seconds",
			Help: "Duration of one stage call within a scheduling cycle, by scheduling profile.", Buckets: stageBuckets}, []string{"profile", "stage", "plugin"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_stage_fallbacks_total",
			Help: "Cycles where a stage's fallback replaced its plugin's answer, by scheduling profile and reason."}, []string{"profile", "stage", "reason"}),
		degraded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_producer_degraded_total",
			Help: "Cycles whose producer failed, by scheduling profile and where their predictions came from instead: reused, prior or none."}, []string{"profile", "level"}),
	}
	for _, c := range []prometheus.Collector{s.duration, s.fallbacks, s.degraded, pluginCollector(plugins)} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Observe records every stage call of a cycle's trace (flow control's are recorded by
// ObserveStage as they are made: attach them to the trace after this).
func (s *Stages) Observe(t *pipeline.Trace) {
	for _, st := range t.Stages() {
		s.ObserveStage(t.Profile, st)
	}
}

// ObserveStage records one stage call of profile's pipeline.
func (s *Stages) ObserveStage(profile string, st *pipeline.StageTrace) {
	stage := st.Stage.String()
	s.duration.WithLabelValues(profile, stage, st.Plugin).Observe(st.Duration.Seconds())
	if st.Fallback != "" {
		s.fallbacks.WithLabelValues(profile, stage, pipeline.FallbackLabel(st.Fallback)).Inc()
	}
	if st.Degraded != "" {
		s.degraded.WithLabelValues(profile, st.Degraded).Inc()
	}
}

// plugins reads the plugins' restarts and liveness at scrape time.
type plugins struct {
	list             func() []*pluginhost.Plugin
	restarts, upDesc *prometheus.Desc
}

func pluginCollector(list func() []*pluginhost.Plugin) *plugins {
	return &plugins{list: list,
		restarts: prometheus.NewDesc("foresight_plugin_restarts_total", "Restarts of a plugin process after it exited.", []string{"plugin"}, nil),
		upDesc:   prometheus.NewDesc("foresight_plugin_up", "1 while the plugin serves (a built-in always does).", []string{"plugin"}, nil),
	}
}

func (p *plugins) Describe(ch chan<- *prometheus.Desc) { ch <- p.restarts; ch <- p.upDesc }

func (p *plugins) Collect(ch chan<- prometheus.Metric) {
	for _, pl := range p.list() {
		st := pl.Status()
		up := 0.0
		if st.Up || st.Builtin {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(p.restarts, prometheus.CounterValue, float64(st.Restarts), st.Name)
		ch <- prometheus.MustNewConstMetric(p.upDesc, prometheus.GaugeValue, up, st.Name)
	}
}
