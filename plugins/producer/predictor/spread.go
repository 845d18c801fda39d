package predictor

import (
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// The spread of the predictions (Prediction.TTFTSpread, TPOTSpread): per endpoint and target, the
// root mean square of ln(actual / predicted) over about the endpoint's last spreadWindow samples,
// pulled toward the fleet's by spreadShrink pseudo-samples, so an endpoint with few samples reads
// as the fleet and one unlucky request does not widen it alone. Stages read a prediction as the
// median of a log-normal latency of that spread: how likely the request is to meet an objective
// there, and how many of the requests running there sit near theirs.
const (
	// spreadWindow is about how many of an endpoint's recent samples its spread averages: the
	// prior's speed factors average as many (prior.DefaultParams), enough for a mean square to
	// settle within about 15 %, few enough to follow a server whose load changes within minutes.
	spreadWindow = 100
	// spreadShrink pulls an endpoint's spread toward the fleet's as if it had this many samples
	// at the fleet's spread, as the prior's speed factors are.
	spreadShrink = 8
	// spreadMinSamples is how many scored samples of a target the fleet needs before any spread
	// is published: fewer give a mean square that one outlier decides.
	spreadMinSamples = 16
	// minSpread is the least spread published: a producer that has been exact so far publishes
	// 1 %, not 0, which would read as "unknown".
	minSpread = 0.01
)

// spreadLog bounds one sample's |ln(actual / predicted)|, as the prior bounds its speed samples:
// a request 20× off is a hiccup, not a spread.
var spreadLog = math.Log(20)

// meanSquare is a running mean of squared log ratios over about spreadWindow samples.
type meanSquare struct {
	sq, n float64
}

func (m *meanSquare) add(logRatio float64) {
	l := min(max(logRatio, -spreadLog), spreadLog)
	m.n = min(m.n+1, spreadWindow)
	m.sq += (l*l - m.sq) / m.n
}

// spreads learns the spreads from the samples (add, under the producer's mu) and publishes them as
// an immutable table that Produce reads (snapshot). Targets are indexed like the prior's
// (prior.TTFT, prior.TPOT).
type spreads struct {
	fleet      [2]meanSquare
	byEndpoint map[string]*[2]meanSquare
}

func newSpreads() *spreads { return &spreads{byEndpoint: map[string]*[2]meanSquare{}} }

// add scores the prediction s carries against what it measured; a target without a prediction
// or a measurement is skipped.
func (sp *spreads) add(s *sdk.Sample, ttft, tpot float64) {
	if !s.Predicted.Valid {
		return
	}
	e := sp.byEndpoint[s.EndpointID]
	if e == nil {
		e = &[2]meanSquare{}
		sp.byEndpoint[s.EndpointID] = e
	}
	for k, pair := range [2][2]float64{{ttft, s.Predicted.TTFTMs}, {tpot, s.Predicted.TPOTMs}} {
		actual, predicted := pair[0], pair[1]
		if !(actual > 0) || !(predicted > 0) {
			continue
		}
		l := math.Log(actual / predicted)
		sp.fleet[k].add(l)
		e[k].add(l)
	}
}

// spreadTable is a published set of spreads: per endpoint, the TTFT and TPOT spread (0: unknown).
// An endpoint it does not list reads as the fleet.
type spreadTable struct {
	fleet      [2]float64
	byEndpoint map[string][2]float64
}

// snapshot publishes the spreads: a target the fleet has fewer than spreadMinSamples samples of
// stays 0 everywhere.
func (sp *spreads) snapshot() *spreadTable {
	t := &spreadTable{byEndpoint: make(map[string][2]float64, len(sp.byEndpoint))}
	for k := range t.fleet {
		if sp.fleet[k].n >= spreadMinSamples {
			t.fleet[k] = max(math.Sqrt(sp.fleet[k].sq), minSpread)
		}
	}
	for id, e := range sp.byEndpoint {
		var v [2]float64
		for k := range v {
			if t.fleet[k] > 0 {
				f := sp.fleet[k].sq
				v[k] = max(math.Sqrt((e[k].n*e[k].sq+spreadShrink*f)/(e[k].n+spreadShrink)), minSpread)
			}
		}
		t.byEndpoint[id] = v
	}
	return t
}

// of returns the endpoint's TTFT and TPOT spreads (the fleet's for one not seen; zeros for a nil
// table).
func (t *spreadTable) of(endpoint string) [2]float64 {
	if t == nil {
		return [2]float64{}
	}
	if v, ok := t.byEndpoint[endpoint]; ok {
		return v
	}
	return t.fleet
}
