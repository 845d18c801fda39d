package builtin

import (
	"context"
	"fmt"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// Every built-in scorer says itself what a round's placement does to its scores (sdk.RoundScorer):
// the queue scorers' queue moves with the in-flight ledger, the KV usage and the prefix match do
// not move at all. Without it they would answer no after-scores, and a round's colliding picks would
// be decided again.
var (
	_ sdk.RoundScorer = (*QueueScorer)(nil)
	_ sdk.RoundScorer = (*KVCacheScorer)(nil)
	_ sdk.RoundScorer = (*PrefixScorer)(nil)
	_ sdk.RoundScorer = (*CompositeScorer)(nil)
)

// ScoreAfter returns, per endpoint i, the queue score i would get with one more request like c's
// placed on it (sdk.PlaceOn(c, i, 1)), on the scale of c's current scores: its queue one longer,
// normalised by the current queues' min and max (heuristics.QueueScoresAfter).
func (s *QueueScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if err := checkRoundScores(c, scores); err != nil {
		return nil, err
	}
	return heuristics.QueueScoresAfter(c, heuristics.PlacedEach(c), heuristics.Queue(s.Get().Source)), nil
}

// ScoreAfter returns scores unchanged: a placement does not move the scraped KV usage until the
// next scrape (sdk.PlaceOn).
func (s *KVCacheScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if err := checkRoundScores(c, scores); err != nil {
		return nil, err
	}
	return slices.Clone(scores), nil
}

// ScoreAfter returns scores unchanged: a placement does not move the prefix match (a request of
// the round with the same prefix raises it, which the host checks on its own, sdk.PlaceOn).
func (s *PrefixScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if err := checkRoundScores(c, scores); err != nil {
		return nil, err
	}
	return slices.Clone(scores), nil
}

// ScoreAfter returns, per endpoint i, the composite score i would get with one more request like
// c's placed on it, on the scale of c's current scores (heuristics.CompositeScoresAfter).
func (s *CompositeScorer) ScoreAfter(_ context.Context, c *sdk.Cycle, scores []float64) ([]float64, error) {
	if err := checkRoundScores(c, scores); err != nil {
		return nil, err
	}
	return heuristics.CompositeScoresAfter(c, heuristics.PlacedEach(c), *s.Get()), nil
}

// checkRoundScores returns an error unless c is a cycle and scores has one score per endpoint.
func checkRoundScores(c *sdk.Cycle, scores []float64) error {
	if err := checkCycle("scoring after a placement", c); err != nil {
		return err
	}
	if len(scores) != len(c.Endpoints) {
		return fmt.Errorf("scoring after a placement: got %d scores for %d endpoints, want one per endpoint", len(scores), len(c.Endpoints))
	}
	return nil
}
