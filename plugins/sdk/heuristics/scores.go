package heuristics

import (
	"errors"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Load heuristics shared by the built-in baseline scorers and the latency scorer's fallback.
// Each score function returns one score in [0, 1] per endpoint of the cycle, higher is better.

// QueueScores scores endpoints by queue depth: (maxQ − q) / (maxQ − minQ), min–max normalised over
// the cycle; every endpoint scores 1 when all queues are equal. queue returns an endpoint's depth.
func QueueScores(c *sdk.Cycle, queue func(*sdk.EndpointState) int64) []float64 {
	scores := make([]float64, len(c.Endpoints))
	lo, hi := queueBounds(c, queue)
	for i := range c.Endpoints {
		if hi == lo {
			scores[i] = 1
			continue
		}
		scores[i] = float64(hi-queue(&c.Endpoints[i].State)) / float64(hi-lo)
	}
	return scores
}

// queueBounds returns the shortest and the longest queue of c's endpoints (0, 0 with none).
func queueBounds(c *sdk.Cycle, queue func(*sdk.EndpointState) int64) (lo, hi int64) {
	for i := range c.Endpoints {
		q := queue(&c.Endpoints[i].State)
		if i == 0 {
			lo, hi = q, q
		}
		lo, hi = min(lo, q), max(hi, q)
	}
	return lo, hi
}

// FreshWaiting returns the engine's scraped waiting-queue gauge (llm-d's queue-scorer signal) plus
// the requests the router dispatched to the endpoint since that scrape and that have not finished
// (DispatchedSinceScrape): each of them either joined the queue or took a running place, load the
// gauge does not show yet either way. It moves with every dispatch, where the gauge alone stands
// still between two scrapes: a burst of arrivals in between spreads instead of herding on the
// endpoint whose gauge was lowest.
func FreshWaiting(s *sdk.EndpointState) int64 { return s.Waiting + s.DispatchedSinceScrape }

// Inflight returns the router's own in-flight request count (fresh, unlike the scraped gauges).
func Inflight(s *sdk.EndpointState) int64 { return s.InflightRequests }

// KVCacheScores scores 1 − KV-cache usage, clamped to [0, 1].
func KVCacheScores(c *sdk.Cycle) []float64 {
	scores := make([]float64, len(c.Endpoints))
	for i := range c.Endpoints {
		scores[i] = clamp01(1 - c.Endpoints[i].State.KVCacheUsage)
	}
	return scores
}

// PrefixScores scores the endpoint's prefix match, clamped to [0, 1].
func PrefixScores(c *sdk.Cycle) []float64 {
	scores := make([]float64, len(c.Endpoints))
	for i := range c.Endpoints {
		scores[i] = clamp01(c.Endpoints[i].State.PrefixMatch)
	}
	return scores
}

// The queue signals the load scores can read.
const (
	// QueueWaiting is the engine's waiting queue as llm-d's scorers read it, made fresh:
	// FreshWaiting, the scraped gauge plus the requests dispatched there since that scrape.
	QueueWaiting = "waiting"
	// QueueInflight is the router's own in-flight request count (Inflight): every request it
	// sent there that has not finished, waiting or running, fresh at every decision.
	QueueInflight = "inflight"
)

// Queue returns the queue signal named source (QueueWaiting or QueueInflight; anything else
// reads as QueueWaiting, validated by the callers' parameters).
func Queue(source string) func(*sdk.EndpointState) int64 {
	if source == QueueInflight {
		return Inflight
	}
	return FreshWaiting
}

// CompositeParams weigh the three load signals of CompositeScores and name its queue signal.
type CompositeParams struct {
	KVCache float64 `json:"kvCacheWeight"`
	Queue   float64 `json:"queueWeight"`
	Prefix  float64 `json:"prefixWeight"`
	// QueueSource is QueueWaiting or QueueInflight.
	QueueSource string `json:"queueSource"`
}

// DefaultCompositeParams are llm-d's latency-scorer fallback: weights 1, 1, 1 on the waiting queue.
var DefaultCompositeParams = CompositeParams{KVCache: 1, Queue: 1, Prefix: 1, QueueSource: QueueWaiting}

// Validate checks that every weight is in [0, 100], at least one is positive, and the queue
// source is known.
func (w *CompositeParams) Validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"kvCacheWeight", w.KVCache}, {"queueWeight", w.Queue}, {"prefixWeight", w.Prefix}} {
		if err := sdk.CheckRange(p.name, p.v, 0, 100); err != nil {
			return err
		}
	}
	if w.KVCache+w.Queue+w.Prefix == 0 {
		return errors.New("at least one of kvCacheWeight, queueWeight, prefixWeight must be positive")
	}
	return sdk.CheckOneOf("queueSource", w.QueueSource, QueueWaiting, QueueInflight)
}

// CompositeScores is llm-d's fallback score wkv·(1 − kv) + wq·queue + wp·prefix, divided by the
// weights' sum so it stays in [0, 1]. The queue term is QueueScores over the signal QueueSource
// names, min–max normalised like llm-d's queue-scorer (llm-d's composite divides by the largest
// queue alone; the two agree whenever some endpoint has none, and min–max still tells endpoints
// apart when all of them queue). Both signals move with every dispatch, where llm-d reads the
// waiting gauge alone: between two scrapes the gauge and the KV usage stand still, and every
// arrival would score the same endpoint best. The KV term stays the scraped usage: how much KV a
// dispatched request takes depends on the engine's cache size and on whether it waits or runs,
// which the state does not tell.
func CompositeScores(c *sdk.Cycle, w CompositeParams) []float64 {
	total := w.KVCache + w.Queue + w.Prefix
	if total <= 0 {
		return make([]float64, len(c.Endpoints))
	}
	scores := QueueScores(c, Queue(w.QueueSource))
	for i := range c.Endpoints {
		s := &c.Endpoints[i].State
		scores[i] = (w.KVCache*clamp01(1-s.KVCacheUsage) + w.Queue*scores[i] + w.Prefix*clamp01(s.PrefixMatch)) / total
	}
	return scores
}

func clamp01(v float64) float64 {
	switch {
	case v < 0 || v != v:
		return 0
	case v > 1:
		return 1
	default:
		return v
	}
}
