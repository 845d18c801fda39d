package admin

import (
	"cmp"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/foresight-router/foresight/internal/promtext"
)

// Dashboard is GET /admin/dashboard.json: what the page at GET /dashboard draws. Counters,
// gauges and stage latencies are read from the router's own metrics at the moment of the
// request (the same values GET /metrics serves), so the page and a Prometheus scrape agree; the
// latency pairs and the events are the router's bounded memories of the recent past.
type Dashboard struct {
	At          time.Time      `json:"at"`
	Requests    RequestCounts  `json:"requests"`
	Endpoints   []EndpointView `json:"endpoints"`
	Predictions SampleView     `json:"predictions"`
	Stages      []StageView    `json:"stages"`
	Fallbacks   []FallbackView `json:"fallbacks"`
	// Experiment is GET /admin/experiments' report; null without an experiment.
	Experiment any       `json:"experiment"`
	Events     EventView `json:"events"`
	// Errors lists the metrics that could not be gathered; the rest of the answer still holds.
	Errors []string `json:"errors,omitempty"`
}

// RequestCounts are the answered requests (foresight_requests_total) by HTTP status.
type RequestCounts struct {
	Total  float64            `json:"total"`
	ByCode map[string]float64 `json:"by_code"`
}

// EndpointView is one endpoint of the router's current list.
type EndpointView struct {
	ID       string  `json:"id"`
	Healthy  bool    `json:"healthy"`
	Ejected  bool    `json:"ejected"`
	Inflight float64 `json:"inflight"` // the router's own ledger
	// Waiting, Running and KVCacheUsage (0..1) are the engine's gauges at the router's last scrape.
	Waiting      float64 `json:"waiting"`
	Running      float64 `json:"running"`
	KVCacheUsage float64 `json:"kv_cache_usage"`
	Requests     float64 `json:"requests"` // dispatched there since the start (a failover counts for each endpoint tried)
	// Share is Requests over the requests dispatched to every endpoint, including endpoints
	// since removed from the list; 0 before any request.
	Share float64 `json:"share"`
}

// StageView is one stage's calls (foresight_stage_duration_seconds) for one profile and plugin.
type StageView struct {
	Profile string  `json:"profile"`
	Stage   string  `json:"stage"`
	Plugin  string  `json:"plugin"`
	Calls   uint64  `json:"calls"`
	MeanMs  float64 `json:"mean_ms"`
	// P95Ms is interpolated within the histogram's doubling buckets, so it is within a factor of
	// two of the true value; +Inf buckets report the last finite bound.
	P95Ms float64 `json:"p95_ms"`
}

// FallbackView counts cycles in which a stage's fallback replaced the plugin's answer
// (foresight_stage_fallbacks_total).
type FallbackView struct {
	Profile string  `json:"profile"`
	Stage   string  `json:"stage"`
	Reason  string  `json:"reason"`
	Count   float64 `json:"count"`
}

// buildDashboard reads the metric families into a Dashboard; the memories and the experiment
// are the caller's.
func buildDashboard(families []*dto.MetricFamily) Dashboard {
	d := Dashboard{Requests: RequestCounts{ByCode: map[string]float64{}}, Endpoints: []EndpointView{},
		Stages: []StageView{}, Fallbacks: []FallbackView{}}
	eps := map[string]*EndpointView{}
	endpoint := func(m *dto.Metric) *EndpointView {
		id := label(m, "endpoint")
		if eps[id] == nil {
			eps[id] = &EndpointView{ID: id}
		}
		return eps[id]
	}
	var dispatched float64
	requests := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "foresight_requests_total":
				d.Requests.ByCode[label(m, "code")] += m.GetCounter().GetValue()
				d.Requests.Total += m.GetCounter().GetValue()
			case "foresight_endpoint_requests_total":
				requests[label(m, "endpoint")] += m.GetCounter().GetValue()
				dispatched += m.GetCounter().GetValue()
			// The gauges exist only for the endpoints the router has now: they make the list.
			case "foresight_endpoint_healthy":
				endpoint(m).Healthy = m.GetGauge().GetValue() == 1
			case "foresight_endpoint_ejected":
				endpoint(m).Ejected = m.GetGauge().GetValue() == 1
			case "foresight_endpoint_inflight_requests":
				endpoint(m).Inflight = m.GetGauge().GetValue()
			case "foresight_endpoint_waiting_requests":
				endpoint(m).Waiting = m.GetGauge().GetValue()
			case "foresight_endpoint_running_requests":
				endpoint(m).Running = m.GetGauge().GetValue()
			case "foresight_endpoint_kv_cache_usage_ratio":
				endpoint(m).KVCacheUsage = m.GetGauge().GetValue()
			case "foresight_stage_duration_seconds":
				h := m.GetHistogram()
				s := StageView{Profile: label(m, "profile"), Stage: label(m, "stage"), Plugin: label(m, "plugin"),
					Calls: h.GetSampleCount(), P95Ms: 1000 * promtext.HistogramQuantile(h, 0.95)}
				if s.Calls > 0 {
					s.MeanMs = 1000 * h.GetSampleSum() / float64(s.Calls)
				}
				d.Stages = append(d.Stages, s)
			case "foresight_stage_fallbacks_total":
				d.Fallbacks = append(d.Fallbacks, FallbackView{Profile: label(m, "profile"), Stage: label(m, "stage"),
					Reason: label(m, "reason"), Count: m.GetCounter().GetValue()})
			}
		}
	}
	for id, e := range eps {
		e.Requests = requests[id]
		if dispatched > 0 {
			e.Share = e.Requests / dispatched
		}
		d.Endpoints = append(d.Endpoints, *e)
	}
	slices.SortFunc(d.Endpoints, func(a, b EndpointView) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(d.Stages, func(a, b StageView) int {
		return cmp.Or(strings.Compare(a.Profile, b.Profile), strings.Compare(a.Stage, b.Stage), strings.Compare(a.Plugin, b.Plugin))
	})
	slices.SortFunc(d.Fallbacks, func(a, b FallbackView) int {
		return cmp.Or(strings.Compare(a.Profile, b.Profile), strings.Compare(a.Stage, b.Stage), strings.Compare(a.Reason, b.Reason))
	})
	return d
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// dashboard builds GET /admin/dashboard.json's answer from o's sources.
func dashboard(o Options) Dashboard {
	families, err := o.Metrics.Gather() // on error, the families it could gather
	d := buildDashboard(families)
	d.At = time.Now().UTC()
	if err != nil {
		d.Errors = append(d.Errors, "gathering metrics: "+err.Error())
	}
	if rep, ok := o.Control.Experiments(); ok {
		d.Experiment = rep
	}
	d.Predictions = SampleView{Capacity: DefaultSamples, Points: []Point{}}
	if o.Samples != nil {
		d.Predictions = o.Samples.View()
	}
	d.Events = EventView{Capacity: DefaultEvents, Items: []Event{}}
	if o.Events != nil {
		d.Events = o.Events.View()
	}
	return d
}
