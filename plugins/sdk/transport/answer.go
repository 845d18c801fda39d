package transport

import (
	"fmt"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Checks every stage answer must pass, whether it came over the wire (the client shims) or from an
// in-process stage (Local): the host never trusts a stage's sizes or indices (the index check,
// wire.CheckIndices, is shared with the plugin side).

func checkPredictions(p []sdk.Prediction, n int) error {
	if len(p) != n {
		return fmt.Errorf("producer returned %d predictions for %d endpoints", len(p), n)
	}
	return nil
}

func checkScores(s []float64, n int) error {
	if len(s) != n {
		return fmt.Errorf("scorer returned %d scores for %d endpoints", len(s), n)
	}
	return nil
}

// checkScored checks a scorer's answer: n scores, and n after-scores or none.
func checkScored(v Scored, n int) error {
	if err := checkScores(v.Scores, n); err != nil {
		return err
	}
	if len(v.After) != 0 && len(v.After) != n {
		return fmt.Errorf("scorer returned %d after-scores for %d endpoints", len(v.After), n)
	}
	return nil
}

// checkPickBatch checks the sizes of a pick batch: a score set per cycle, and an after-score set
// per cycle or none at all.
func checkPickBatch(cycles []*sdk.Cycle, scores, after [][]float64) error {
	if len(scores) != len(cycles) {
		return fmt.Errorf("pick batch has %d score sets for %d cycles", len(scores), len(cycles))
	}
	if len(after) != 0 && len(after) != len(cycles) {
		return fmt.Errorf("pick batch has %d after-score sets for %d cycles", len(after), len(cycles))
	}
	return nil
}

func checkRoom(v sdk.SaturationVerdict, n int) error {
	if len(v.Room) != n {
		return fmt.Errorf("detector returned %d room counts for %d endpoints", len(v.Room), n)
	}
	if len(v.Slots) != 0 && len(v.Slots) != n {
		return fmt.Errorf("detector returned %d slot counts for %d endpoints", len(v.Slots), n)
	}
	for i, r := range v.Room {
		if r < 0 {
			return fmt.Errorf("detector returned room %d for endpoint %d: want 0 or more", r, i)
		}
	}
	for i, s := range v.Slots {
		if s < 0 {
			return fmt.Errorf("detector returned %d slots for endpoint %d: want 0 or more", s, i)
		}
	}
	return nil
}
