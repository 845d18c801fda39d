package sdk

import (
	"context"
	"fmt"
	"slices"
)

// The round runner: how a stage served by this SDK answers the cycles of a round (see Round). The
// plugin side's shims (server.go) and the host's in-process stages (transport.Local) both answer
// through these two functions, so a stage behaves the same in a process and in the host.

// AfterScores returns scorer s's after-scores for c (see RoundScorer), for a cycle in a round;
// nil for any other cycle, and for a Scorer that is not a RoundScorer: it cannot say, so it says
// nothing (re-scoring a copy with an endpoint placed on would renormalise the other endpoints'
// scores too, which one after-score per endpoint cannot carry). scores are s's own scores for c.
func AfterScores(ctx context.Context, s Scorer, c *Cycle, scores []float64) ([]float64, error) {
	rs, ok := s.(RoundScorer)
	if !c.InRound() || !ok {
		return nil, nil
	}
	after, err := rs.ScoreAfter(ctx, c, scores)
	if err != nil {
		return nil, err
	}
	if len(after) != len(c.Endpoints) {
		return nil, fmt.Errorf("scorer returned %d after-scores for %d endpoints", len(after), len(c.Endpoints))
	}
	return after, nil
}

// PickRound answers the cycles of a picker's batch in order through pick, which calls the
// picker for cycle i with the cycle and scores given and returns the order it gave, or nil when
// the cycle failed (a nil cycle is one the caller could not decode: pick answers it with its
// error). Consecutive cycles of a round (Cycle.InRound; a round starts at Position 0, or where
// the positions or sizes stop following on) are placed as the round's contract says: cycle k is
// given a copy of itself on which every endpoint that n earlier cycles of its round took as their
// first choice is moved by PlaceOn(copy, e, n), with its score lowered by n × (scores − after),
// which may take it below 0 (after[i] nil or short: the scores do not move). Endpoints are told apart by id,
// which the host sends to every cycle in a round.
func PickRound(cycles []*Cycle, scores, after [][]float64, pick func(i int, c *Cycle, scores []float64) []int) {
	var placed map[string]int // first choices of the round so far, by endpoint id
	var prev Round
	at := func(v [][]float64, i int) []float64 {
		if i < len(v) {
			return v[i]
		}
		return nil
	}
	for i, c := range cycles {
		if c == nil || !c.InRound() {
			placed, prev = nil, Round{}
			pick(i, c, at(scores, i))
			continue
		}
		if c.Round.Position == 0 || c.Round.Position != prev.Position+1 || c.Round.Size != prev.Size || placed == nil {
			placed = map[string]int{}
		}
		prev = c.Round
		view, s := placedView(c, at(scores, i), at(after, i), placed)
		order := pick(i, view, s)
		if len(order) > 0 && order[0] >= 0 && order[0] < len(c.Endpoints) {
			placed[c.Endpoints[order[0]].ID]++
		}
	}
}

// placedView returns c and its scores as they are after the placements counted in placed: c
// itself when nothing of the round was placed on its endpoints, else a copy.
func placedView(c *Cycle, scores, after []float64, placed map[string]int) (*Cycle, []float64) {
	var view *Cycle
	var moved []float64
	for e := range c.Endpoints {
		n := placed[c.Endpoints[e].ID]
		if n == 0 {
			continue
		}
		if view == nil {
			cp := *c
			cp.host = nil
			cp.Endpoints = slices.Clone(c.Endpoints)
			view = &cp
			moved = slices.Clone(scores)
		}
		PlaceOn(view, e, n)
		if e < len(moved) && e < len(after) {
			moved[e] -= float64(n) * (moved[e] - after[e])
		}
	}
	if view == nil {
		return c, scores
	}
	return view, moved
}
