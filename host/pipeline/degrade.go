package pipeline

import (
	"fmt"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// When the producer fails or misses its deadline, the cycle's predictions degrade in order, and
// the producer's StageTrace.Degraded says which level gave them:
//
//   - DegradeReused: the producer's last predictions for the cycle's endpoints, if it made one for
//     every endpoint within pipeline.predictionMaxAge by the cycles' clocks. They are reused as
//     they were: they describe the endpoint's load when they were made, for the request of
//     that cycle, and nothing is adjusted that the host cannot know.
//   - DegradePrior: heuristics.PriorPredictions, TTFT from each endpoint's queue and
//     first-token rate, valid where the endpoint has a rate, if one has.
//   - DegradeNone: no predictions; the stages' own fallbacks decide on the load heuristics.
//
// One level serves a whole cycle: ranking some endpoints by the producer's numbers and others by
// the prior's would compare two different estimates.
const (
	DegradeReused = "reused"
	DegradePrior  = "prior"
	DegradeNone   = "none"
)

// lastPredictions keeps the producer's last prediction for every endpoint, with the time of the
// cycle it was made for. Safe for concurrent use.
type lastPredictions struct {
	maxAge time.Duration

	mu     sync.Mutex
	by     map[string]stamped // by endpoint id
	pruned time.Time          // the cycle time of the last pruning
}

type stamped struct {
	p  sdk.Prediction
	at time.Time
}

func newLastPredictions(maxAge time.Duration) *lastPredictions {
	return &lastPredictions{maxAge: maxAge, by: map[string]stamped{}}
}

// remember keeps preds, the producer's answer for c, and forgets what is too old to reuse (at
// most once per maxAge, so the map holds about the endpoints of the last maxAge).
func (l *lastPredictions) remember(c *sdk.Cycle, preds []sdk.Prediction) {
	if c.Now.IsZero() {
		return // no clock: its age could not be told
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range c.Endpoints {
		if prev, ok := l.by[c.Endpoints[i].ID]; !ok || !prev.at.After(c.Now) {
			l.by[c.Endpoints[i].ID] = stamped{preds[i], c.Now}
		}
	}
	if c.Now.Sub(l.pruned) > l.maxAge {
		for id, s := range l.by {
			if c.Now.Sub(s.at) > l.maxAge {
				delete(l.by, id)
			}
		}
		l.pruned = c.Now
	}
}

// recall returns the last predictions for c's endpoints and the oldest one's age, if every
// endpoint has one no older than maxAge at c.Now.
func (l *lastPredictions) recall(c *sdk.Cycle) (preds []sdk.Prediction, oldest time.Duration, ok bool) {
	if c.Now.IsZero() || len(c.Endpoints) == 0 {
		return nil, 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	preds = make([]sdk.Prediction, len(c.Endpoints))
	for i := range c.Endpoints {
		s, found := l.by[c.Endpoints[i].ID]
		age := c.Now.Sub(s.at)
		if !found || age > l.maxAge {
			return nil, 0, false
		}
		preds[i], oldest = s.p, max(oldest, age)
	}
	return preds, oldest, true
}

// degrade returns the predictions that stand in for the producer's on c, the level that gave
// them and the reason the trace shows.
func (prod *producerSlot) degrade(c *sdk.Cycle) (preds []sdk.Prediction, level, reason string) {
	if preds, age, ok := prod.last.recall(c); ok {
		return preds, DegradeReused, fmt.Sprintf("reused the producer's last predictions, the oldest %v old", age)
	}
	if preds, ok := heuristics.PriorPredictions(c); ok {
		return preds, DegradePrior, "prior: TTFT from each endpoint's queue and first-token rate"
	}
	return make([]sdk.Prediction, len(c.Endpoints)), DegradeNone, "no predictions: the stages' fallbacks decide"
}
