package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// EndpointGauges is one endpoint's state as a scrape of /metrics reports it.
type EndpointGauges struct {
	ID      string
	Healthy bool
	// Ejected is true while outlier detection keeps the endpoint out; Ejections counts its ejections.
	Ejected   bool
	Ejections int64
	// Inflight is the router's own count of requests dispatched there and not finished.
	Inflight int64
	// Waiting, Running and KVCacheUsage are the engine's gauges at the router's last scrape.
	Waiting, Running int64
	KVCacheUsage     float64
	// PrefixBlocks is how many prompt blocks the router's prefix index holds for the endpoint.
	PrefixBlocks int
	// Slots is how many requests flow control's detector believes the endpoint runs at once; 0:
	// unknown; negative: flow control is off (not reported).
	Slots int64
}

// Endpoints are the per-endpoint metrics, so that one endpoint piling up requests while the
// others idle shows at a glance:
//
//	foresight_endpoint_requests_total{endpoint}        requests dispatched there (a failover counts once for each endpoint tried)
//	foresight_endpoint_inflight_requests{endpoint}     the router's requests in flight there (its own ledger, always fresh)
//	foresight_endpoint_waiting_requests{endpoint}      the engine's waiting queue at the router's last scrape
//	foresight_endpoint_running_requests{endpoint}      the engine's running requests at the router's last scrape
//	foresight_endpoint_kv_cache_usage_ratio{endpoint}  the engine's KV-cache usage (0..1) at the router's last scrape
//	foresight_endpoint_healthy{endpoint}               1 while the endpoint answers its scrapes
//	foresight_endpoint_ejected{endpoint}               1 while outlier detection keeps it out for failing requests
//	foresight_endpoint_ejections_total{endpoint}       its ejections
//	foresight_endpoint_prefix_index_blocks{endpoint}   prompt blocks the router's prefix index holds for it (its memory: ~53 B a block)
//	foresight_endpoint_slots{endpoint}                 with flow control on: the requests its detector believes the endpoint runs at once (0: unknown)
//
// The gauges are read at scrape time from the endpoints the router has then, so an endpoint
// removed from the list leaves them; its requests counter stays.
type Endpoints struct {
	dispatched *prometheus.CounterVec
	read       func() []EndpointGauges

	inflight, waiting, running, kv, healthy, ejected, ejections, prefix, slots *prometheus.Desc
}

// NewEndpoints returns the per-endpoint metrics, registered with reg; read is called at every
// scrape for the gauges.
func NewEndpoints(reg prometheus.Registerer, read func() []EndpointGauges) (*Endpoints, error) {
	label := []string{"endpoint"}
	e := &Endpoints{
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_endpoint_requests_total",
			Help: "Requests dispatched to the endpoint (a failover counts once for each endpoint tried)."}, label),
		read: read,
		inflight: prometheus.NewDesc("foresight_endpoint_inflight_requests",
			"Requests the router has in flight on the endpoint.", label, nil),
		waiting: prometheus.NewDesc("foresight_endpoint_waiting_requests",
			"The engine's waiting requests at the router's last scrape.", label, nil),
		running: prometheus.NewDesc("foresight_endpoint_running_requests",
			"The engine's running requests at the router's last scrape.", label, nil),
		kv: prometheus.NewDesc("foresight_endpoint_kv_cache_usage_ratio",
			"The engine's KV-cache usage (0..1) at the router's last scrape.", label, nil),
		healthy: prometheus.NewDesc("foresight_endpoint_healthy",
			"1 while the endpoint answers its scrapes, else 0.", label, nil),
		ejected: prometheus.NewDesc("foresight_endpoint_ejected",
			"1 while outlier detection keeps the endpoint out of the rotation because its requests kept failing, else 0.", label, nil),
		ejections: prometheus.NewDesc("foresight_endpoint_ejections_total",
			"Times outlier detection ejected the endpoint.", label, nil),
		prefix: prometheus.NewDesc("foresight_endpoint_prefix_index_blocks",
			"Prompt blocks (16 tokens) the router's prefix index holds for the endpoint.", label, nil),
		slots: prometheus.NewDesc("foresight_endpoint_slots",
			"With flow control on: the requests its saturation detector believes the endpoint runs at once (0: unknown).", label, nil),
	}
	for _, c := range []prometheus.Collector{e.dispatched, e} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Dispatched counts one request sent to endpoint id.
func (e *Endpoints) Dispatched(id string) { e.dispatched.WithLabelValues(id).Inc() }

// Describe implements prometheus.Collector (the gauges; the counter registers itself).
func (e *Endpoints) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{e.inflight, e.waiting, e.running, e.kv, e.healthy, e.ejected, e.ejections, e.prefix, e.slots} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (e *Endpoints) Collect(ch chan<- prometheus.Metric) {
	for _, g := range e.read() {
		for _, m := range []struct {
			d *prometheus.Desc
			v float64
		}{
			{e.inflight, float64(g.Inflight)}, {e.waiting, float64(g.Waiting)}, {e.running, float64(g.Running)},
			{e.kv, g.KVCacheUsage}, {e.healthy, one(g.Healthy)}, {e.ejected, one(g.Ejected)}, {e.prefix, float64(g.PrefixBlocks)},
		} {
			ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v, g.ID)
		}
		ch <- prometheus.MustNewConstMetric(e.ejections, prometheus.CounterValue, float64(g.Ejections), g.ID)
		if g.Slots >= 0 {
			ch <- prometheus.MustNewConstMetric(e.slots, prometheus.GaugeValue, float64(g.Slots), g.ID)
		}
	}
}

// one is 1 for true, 0 for false.
func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
