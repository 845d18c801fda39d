package metrics

import (
	"time"

	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/prometheus/client_golang/prometheus"
)

// State exposes the state plane's counters, read at scrape time (stateplane.Plane.Stats), and
// the age of the peers' messages at arrival:
//
//	foresight_state_connected                     1 while the connection to NATS is up
//	foresight_state_peers                         other replicas heard from and not expired
//	foresight_state_peer_requests                 their requests in flight, counted in this replica's ledger
//	foresight_state_messages_total{direction,result}   messages published (ok, failed) and received (applied, invalid)
//	foresight_state_events_total{direction}       events published and applied
//	foresight_state_snapshots_total{direction}    snapshots published and applied
//	foresight_state_gaps_total                    peers' messages found missing (repaired by a snapshot)
//	foresight_state_peers_expired_total           peers forgotten after state.peerTimeout of silence
//	foresight_state_partitions_total              connections lost (every peer forgotten until back)
//	foresight_state_dropped_total                 peers' dispatches not kept (a peer beyond its bound)
//	foresight_state_propagation_seconds           a message's age at arrival (sender's clock to this one's)
type State struct {
	stats       func() stateplane.Stats
	propagation prometheus.Histogram

	connected, peers, peerRequests, messages, events, snapshots *prometheus.Desc
	gaps, expired, partitions, dropped                          *prometheus.Desc
}

// NewState registers the state plane's metrics with reg; stats is called at every scrape.
// Observe is the plane's Config.Propagation.
func NewState(reg prometheus.Registerer, stats func() stateplane.Stats) (*State, error) {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("foresight_state_"+name, help, labels, nil)
	}
	s := &State{stats: stats,
		propagation: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "foresight_state_propagation_seconds",
			Help:    "Age of a peer's state message when it arrived: its publish time by the sender's clock to its arrival by this replica's.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, 1}}),
		connected:    d("connected", "1 while the state plane's connection to NATS is up, else 0."),
		peers:        d("peers", "Other replicas heard from and not expired."),
		peerRequests: d("peer_requests", "The other replicas' requests in flight, counted in this replica's ledger."),
		messages:     d("messages_total", "State messages published (ok, failed) and received (applied, invalid).", "direction", "result"),
		events:       d("events_total", "Dispatch, first-token and finish events published and applied.", "direction"),
		snapshots:    d("snapshots_total", "Snapshots of requests in flight published and applied.", "direction"),
		gaps:         d("gaps_total", "Peers' messages found missing from their sequence (a snapshot repairs them)."),
		expired:      d("peers_expired_total", "Peers forgotten after state.peerTimeout without a message."),
		partitions:   d("partitions_total", "Connections to NATS lost: every peer is forgotten until the connection is back."),
		dropped:      d("dropped_total", "Peers' dispatches not kept, the peer beyond its bound of requests in flight."),
	}
	if err := reg.Register(s); err != nil {
		return nil, err
	}
	return s, reg.Register(s.propagation)
}

// Observe records one message's age at arrival.
func (s *State) Observe(age time.Duration) { s.propagation.Observe(age.Seconds()) }

// Describe implements prometheus.Collector.
func (s *State) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.connected, s.peers, s.peerRequests, s.messages, s.events, s.snapshots,
		s.gaps, s.expired, s.partitions, s.dropped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (s *State) Collect(ch chan<- prometheus.Metric) {
	st := s.stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	connected := 0.0
	if st.Connected {
		connected = 1
	}
	gauge(s.connected, connected)
	gauge(s.peers, float64(st.Peers))
	gauge(s.peerRequests, float64(st.PeerFlights))
	counter(s.messages, st.Published, "published", "ok")
	counter(s.messages, st.PublishFailures, "published", "failed")
	counter(s.messages, st.Received-st.Invalid, "received", "applied")
	counter(s.messages, st.Invalid, "received", "invalid")
	counter(s.events, st.PublishedEvents, "published")
	counter(s.events, st.Applied, "applied")
	counter(s.snapshots, st.SnapshotsPublished, "published")
	counter(s.snapshots, st.Snapshots, "applied")
	counter(s.gaps, st.Gaps)
	counter(s.expired, st.Expired)
	counter(s.partitions, st.Partitions)
	counter(s.dropped, st.Dropped)
}
