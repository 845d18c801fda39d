package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// queueWaitBuckets span 1 ms to ~65 s, doubling: from a request dispatched at the next completion
// to one that waited out the queue's 30 s TTL.
var queueWaitBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// MaxFlowLabels bounds the flow label of foresight_flow_queue_wait_seconds: the first flows by
// name keep their own series, the others share OtherFlow, so a client that invents a fairness id
// per request cannot grow the metrics without bound.
const MaxFlowLabels = 64

// OtherFlow is the flow label of the flows past the first MaxFlowLabels.
const OtherFlow = "other"

// FlowControl are the metrics of the router-side queue (flowControl):
//
//	foresight_flow_queue_requests{band}               requests waiting in each priority band
//	foresight_flow_queue_bytes{band}                  the sum of their bodies' bytes
//	foresight_flow_waiting_room_requests              requests waiting for an endpoint to exist (flowControl.noEndpointsTTL)
//	foresight_flow_queue_wait_seconds{band,flow}      how long a dispatched request waited in the queue (flow: the
//	                                                  first 64 flows by name, the others "other")
//	foresight_flow_dispatched_total{band}             requests dispatched from the queue
//	foresight_flow_shed_total{band,reason}            requests that left without dispatch: band-full, band-bytes-full,
//	                                                  too-large, ttl-expired, no-endpoints, client-gone
type FlowControl struct {
	length, bytes *prometheus.GaugeVec
	room          prometheus.Gauge
	wait          *prometheus.HistogramVec
	dispatched    *prometheus.CounterVec
	shed          *prometheus.CounterVec

	mu    sync.Mutex
	flows map[string]bool // the flows with their own label
}

// NewFlowControl returns the flow control metrics, registered with reg.
func NewFlowControl(reg prometheus.Registerer) (*FlowControl, error) {
	f := &FlowControl{
		length: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "foresight_flow_queue_requests",
			Help: "Requests waiting in the router's queue, by priority band."}, []string{"band"}),
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "foresight_flow_queue_bytes",
			Help: "Bytes of the request bodies waiting in the router's queue, by priority band."}, []string{"band"}),
		room: prometheus.NewGauge(prometheus.GaugeOpts{Name: "foresight_flow_waiting_room_requests",
			Help: "Requests waiting for the pool to have an endpoint at all (flowControl.noEndpointsTTL)."}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "foresight_flow_queue_wait_seconds",
			Help:    "Time a dispatched request waited in the router's queue, by priority band and flow (the first 64 flows by name, the others \"other\").",
			Buckets: queueWaitBuckets}, []string{"band", "flow"}),
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_flow_dispatched_total",
			Help: "Requests dispatched from the router's queue, by priority band."}, []string{"band"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_flow_shed_total",
			Help: "Requests that left the router's queue without dispatch, by priority band and reason."}, []string{"band", "reason"}),
		flows: map[string]bool{},
	}
	for _, c := range []prometheus.Collector{f.length, f.bytes, f.room, f.wait, f.dispatched, f.shed} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Queued sets band's queue length and bytes.
func (f *FlowControl) Queued(band int, n int, bytes int64) {
	b := strconv.Itoa(band)
	f.length.WithLabelValues(b).Set(float64(n))
	f.bytes.WithLabelValues(b).Set(float64(bytes))
}

// WaitingRoom sets how many requests wait for an endpoint to exist.
func (f *FlowControl) WaitingRoom(n int) { f.room.Set(float64(n)) }

// Dispatched counts a request of band and flow dispatched after waiting d in the queue.
func (f *FlowControl) Dispatched(band int, flow string, d time.Duration) {
	b := strconv.Itoa(band)
	f.dispatched.WithLabelValues(b).Inc()
	f.wait.WithLabelValues(b, f.flowLabel(flow)).Observe(d.Seconds())
}

// Shed counts a request of band that left without dispatch for reason (a flowcontrol.Reason's
// label, no-endpoints or client-gone).
func (f *FlowControl) Shed(band int, reason string) {
	f.shed.WithLabelValues(strconv.Itoa(band), reason).Inc()
}

// flowLabel is flow's label: its name while fewer than MaxFlowLabels flows have one, OtherFlow
// after.
func (f *FlowControl) flowLabel(flow string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flows[flow] {
		return flow
	}
	if len(f.flows) < MaxFlowLabels {
		f.flows[flow] = true
		return flow
	}
	return OtherFlow
}
