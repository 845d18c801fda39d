package builtin

import (
	"context"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// The built-in scorer types.
const (
	// QueueScorerType is the type of QueueScorer.
	QueueScorerType = "queue-scorer"
	// KVCacheScorerType is the type of KVCacheScorer.
	KVCacheScorerType = "kv-cache-utilization-scorer"
	// PrefixScorerType is the type of PrefixScorer.
	PrefixScorerType = "prefix-cache-scorer"
	// CompositeScorerType is the type of CompositeScorer, also the scorer fallback.
	CompositeScorerType = "composite-scorer"
)

var (
	_ sdk.Scorer = (*QueueScorer)(nil)
	_ sdk.Scorer = (*KVCacheScorer)(nil)
	_ sdk.Scorer = (*PrefixScorer)(nil)
	_ sdk.Scorer = (*CompositeScorer)(nil)
)

// QueueParams are QueueScorer's parameters.
type QueueParams struct {
	// Source is the queue signal: heuristics.QueueWaiting (default) or heuristics.QueueInflight.
	Source string `json:"source"`
}

// Validate returns an error unless Source is a known signal.
func (p *QueueParams) Validate() error {
	return sdk.CheckOneOf("source", p.Source, heuristics.QueueWaiting, heuristics.QueueInflight)
}

// defaultQueueParams returns QueueScorer's defaults: the engine waiting queue, as llm-d reads,
// counting the dispatches since the scrape.
func defaultQueueParams() QueueParams { return QueueParams{Source: heuristics.QueueWaiting} }

// QueueScorer scores (maxQ − q)/(maxQ − minQ) over the cycle (heuristics.QueueScores); every
// endpoint scores 1 when all queues are equal. q is heuristics.FreshWaiting (source "waiting") or
// heuristics.Inflight (source "inflight"). Its Configure (from sdk.Params) merges params over the
// defaults (source "waiting") and is safe against concurrent Score calls; on error the previous
// parameters stay in force.
type QueueScorer struct {
	sdk.Params[QueueParams]
}

// NewQueueScorer returns a queue scorer reading the engine waiting queue plus the dispatches since
// its scrape.
func NewQueueScorer() *QueueScorer {
	s := &QueueScorer{}
	s.Init(defaultQueueParams)
	return s
}

// Type returns "queue-scorer".
func (s *QueueScorer) Type() string { return QueueScorerType }

// Description returns one line saying what the scorer does.
func (s *QueueScorer) Description() string {
	return "scores shorter queues higher, min-max normalised over the candidates"
}

// Score returns one queue score per endpoint of c.
func (s *QueueScorer) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	if err := checkCycle("scoring", c); err != nil {
		return nil, err
	}
	return heuristics.QueueScores(c, heuristics.Queue(s.Get().Source)), nil
}

// KVCacheScorer scores 1 − KV-cache usage, clamped to [0, 1] (heuristics.KVCacheScores). No
// parameters.
type KVCacheScorer struct{}

// NewKVCacheScorer returns a KV-cache utilisation scorer.
func NewKVCacheScorer() *KVCacheScorer { return &KVCacheScorer{} }

// Type returns "kv-cache-utilization-scorer".
func (s *KVCacheScorer) Type() string { return KVCacheScorerType }

// Description returns one line saying what the scorer does.
func (s *KVCacheScorer) Description() string {
	return "scores endpoints by free KV cache, 1 - utilisation"
}

// Configure accepts only empty parameters.
func (s *KVCacheScorer) Configure(params []byte) error { return configureNone(params) }

// Score returns one KV-cache score per endpoint of c.
func (s *KVCacheScorer) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	if err := checkCycle("scoring", c); err != nil {
		return nil, err
	}
	return heuristics.KVCacheScores(c), nil
}

// PrefixScorer scores the endpoint's prefix match, clamped to [0, 1] (heuristics.PrefixScores).
// No parameters.
type PrefixScorer struct{}

// NewPrefixScorer returns a prefix-cache scorer.
func NewPrefixScorer() *PrefixScorer { return &PrefixScorer{} }

// Type returns "prefix-cache-scorer".
func (s *PrefixScorer) Type() string { return PrefixScorerType }

// Description returns one line saying what the scorer does.
func (s *PrefixScorer) Description() string {
	return "scores endpoints by the fraction of the prompt's prefix blocks they cache"
}

// Configure accepts only empty parameters.
func (s *PrefixScorer) Configure(params []byte) error { return configureNone(params) }

// Score returns one prefix score per endpoint of c.
func (s *PrefixScorer) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	if err := checkCycle("scoring", c); err != nil {
		return nil, err
	}
	return heuristics.PrefixScores(c), nil
}

// CompositeScorer is llm-d's load fallback, wkv·(1 − kv) + wq·queue + wp·prefix divided by the
// weights' sum, the queue term min–max normalised over the cycle (heuristics.CompositeScores);
// parameters are heuristics.CompositeParams, default 1/1/1 on the waiting queue plus the
// dispatches since its scrape. Its Configure (from sdk.Params) merges params (kvCacheWeight,
// queueWeight, prefixWeight, queueSource) over the defaults and is safe against concurrent Score
// calls; on error the previous parameters stay in force.
type CompositeScorer struct {
	sdk.Params[heuristics.CompositeParams]
}

// NewCompositeScorer returns a composite scorer with heuristics.DefaultCompositeParams.
func NewCompositeScorer() *CompositeScorer {
	s := &CompositeScorer{}
	s.Init(func() heuristics.CompositeParams { return heuristics.DefaultCompositeParams })
	return s
}

// Type returns "composite-scorer".
func (s *CompositeScorer) Type() string { return CompositeScorerType }

// Description returns one line saying what the scorer does.
func (s *CompositeScorer) Description() string {
	return "scores a weighted mix of free KV cache, short waiting queue and prefix match"
}

// Score returns one composite score per endpoint of c.
func (s *CompositeScorer) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	if err := checkCycle("scoring", c); err != nil {
		return nil, err
	}
	return heuristics.CompositeScores(c, *s.Get()), nil
}
