package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/foresight-router/foresight/host/kvevents"
	"github.com/foresight-router/foresight/host/kvindex"
)

// KVEndpoint is one endpoint's KV-cache event subscription as /metrics reports it.
type KVEndpoint struct {
	ID string
	// Live: its prefix match comes from its events (kvindex.Index.Live).
	Live       bool
	Index      kvindex.Stats
	Subscriber kvevents.SubscriberStats
}

// KVEvents exposes the KV-cache event subscriptions, per endpoint that names a publisher, read at
// scrape time:
//
//	foresight_kv_events_tokenized_total{result}        prompts tokenized (ok) or not (failed: matched by the router's record)
//	foresight_kv_events_live{endpoint}                 1 while its prefix match comes from its events, 0 while from the router's record
//	foresight_kv_events_connected{endpoint}            1 while the subscriber is connected to its publisher
//	foresight_kv_events_connects_total{endpoint}       connections made to it (a reconnection after the first)
//	foresight_kv_events_cached_blocks{endpoint}        blocks its engine reports cached (the record's size)
//	foresight_kv_events_messages_total{endpoint}       event batches received
//	foresight_kv_events_blocks_total{endpoint,event}   blocks of events: stored, removed, orphaned (parent unknown),
//	                                                   unknown_removed, ignored (another medium or group), evicted (beyond capacity)
//	foresight_kv_events_gaps_total{endpoint}           sequence gaps, filled by replay or not
//	foresight_kv_events_missed_total{endpoint}         batches lost in gaps replay did not fill
//	foresight_kv_events_replayed_total{endpoint}       batches recovered from the replay socket
//	foresight_kv_events_restarts_total{endpoint}       publisher restarts (its record dropped)
//	foresight_kv_events_invalid_total{endpoint,reason} messages that did not decode (decode), events whose tokens do not fill their blocks (malformed)
type KVEvents struct {
	stats     func() []KVEndpoint
	tokenized func() (ok, failed uint64)

	tokenize, live, connected, connects, blocks, messages, blockEvents, gaps, missed, replayed, restarts, invalid *prometheus.Desc
}

// NewKVEvents registers the subscriptions' metrics with reg; stats and tokenized (the prompts the
// tokenizer turned into tokens, and failed to) are called at every scrape.
func NewKVEvents(reg prometheus.Registerer, stats func() []KVEndpoint, tokenized func() (ok, failed uint64)) error {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("foresight_kv_events_"+name, help, append([]string{"endpoint"}, labels...), nil)
	}
	k := &KVEvents{stats: stats, tokenized: tokenized,
		tokenize: prometheus.NewDesc("foresight_kv_events_tokenized_total",
			"Prompts turned into the engines' tokens (ok), and those the tokenizer failed on (failed: matched by the router's own record).", []string{"result"}, nil),
		live:        d("live", "1 while the endpoint's prefix match comes from its KV-cache events, 0 while from the router's own record."),
		connected:   d("connected", "1 while the subscriber is connected to the endpoint's KV-cache event publisher."),
		connects:    d("connects_total", "Connections made to the endpoint's KV-cache event publisher: more than one are reconnections."),
		blocks:      d("cached_blocks", "Blocks the endpoint's engine reports cached: the size of the router's record of its events."),
		messages:    d("messages_total", "KV-cache event batches received from the endpoint."),
		blockEvents: d("blocks_total", "Blocks of the endpoint's events, by what became of them.", "event"),
		gaps:        d("gaps_total", "Gaps in the endpoint's event sequence, filled by replay or not."),
		missed:      d("missed_total", "Event batches lost in gaps that replay did not fill."),
		replayed:    d("replayed_total", "Event batches recovered from the endpoint's replay socket."),
		restarts:    d("restarts_total", "Restarts of the endpoint's publisher (its sequence began again): the record was dropped."),
		invalid:     d("invalid_total", "Messages that did not decode, and events whose token ids do not fill their blocks.", "reason"),
	}
	return reg.Register(k)
}

// Describe implements prometheus.Collector.
func (k *KVEvents) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{k.tokenize, k.live, k.connected, k.connects, k.blocks, k.messages, k.blockEvents, k.gaps, k.missed, k.replayed, k.restarts, k.invalid} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (k *KVEvents) Collect(ch chan<- prometheus.Metric) {
	ok, failed := k.tokenized()
	ch <- prometheus.MustNewConstMetric(k.tokenize, prometheus.CounterValue, float64(ok), "ok")
	ch <- prometheus.MustNewConstMetric(k.tokenize, prometheus.CounterValue, float64(failed), "failed")
	for _, e := range k.stats() {
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{e.ID}, labels...)...)
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{e.ID}, labels...)...)
		}
		gauge(k.live, bit(e.Live))
		gauge(k.connected, bit(e.Subscriber.Connected))
		counter(k.connects, e.Subscriber.Connects)
		gauge(k.blocks, float64(e.Index.Blocks))
		counter(k.messages, e.Subscriber.Messages)
		for _, b := range []struct {
			event string
			n     uint64
		}{{"stored", e.Index.Stored}, {"removed", e.Index.Removed}, {"orphaned", e.Index.Orphans},
			{"unknown_removed", e.Index.UnknownRemoved}, {"ignored", e.Index.Ignored}, {"evicted", e.Index.Evicted}} {
			counter(k.blockEvents, b.n, b.event)
		}
		counter(k.gaps, e.Subscriber.Gaps)
		counter(k.missed, e.Subscriber.Missed)
		counter(k.replayed, e.Subscriber.Replayed)
		counter(k.restarts, e.Subscriber.Restarts)
		counter(k.invalid, e.Subscriber.DecodeErrors, "decode")
		counter(k.invalid, e.Index.Malformed, "malformed")
	}
}

// bit is 1 for true, 0 for false.
func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
