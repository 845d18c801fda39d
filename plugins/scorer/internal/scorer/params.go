package scorer

import (
	"errors"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// The values of the headroomSelectionStrategy parameter.
const (
	// StrategyLeast prefers the endpoint closest to the SLO boundary (bin-packing).
	StrategyLeast = "least"
	// StrategyMost prefers the endpoint with the most headroom (spreading).
	StrategyMost = "most"
)

// The values of the objective parameter.
const (
	// ObjectiveHeadroom ranks endpoints by headroom against the request's objectives, in tiers
	// (README.md, steps 4 to 6), as llm-d's latency scorer does.
	ObjectiveHeadroom = "headroom"
	// ObjectiveAttainment scores an endpoint by the expected number of requests served within
	// their objectives that placing the request there gives (attain.go).
	ObjectiveAttainment = "attainment"
)

// The values of the ttftReference parameter: what a predicted TTFT is measured against in the
// attainment objective's TTFT share.
const (
	// ReferenceObjective scores a TTFT t as 1 / (1 + t / objective): ½ at the request's TTFT
	// objective (1 s without one), so TTFTs far below it barely differ.
	ReferenceObjective = "objective"
	// ReferenceFastest scores a TTFT t as fastest / t, fastest the lowest predicted TTFT among
	// the endpoints ranked (at least 1 ms): twice the fastest's TTFT scores ½, whatever the
	// objective.
	ReferenceFastest = "fastest"
)

// The values of the runningTPOT parameter: where the attainment objective reads the TPOT of the
// requests running on an endpoint when it counts what a placement there costs them.
const (
	// RunningObserved reads the TPOT the router's streams there have seen so far (the endpoint
	// state's RunningTPOTMs), and the predicted TPOT where none of them has two tokens yet.
	RunningObserved = "observed"
	// RunningPredicted reads the TPOT predicted for this request there, what a request placed on
	// the endpoint as it is would see (the scorer before 3.7.0).
	RunningPredicted = "predicted"
)

// Params are the latency scorer's parameters, decoded from JSON over DefaultParams.
type Params struct {
	// Objective is ObjectiveHeadroom or ObjectiveAttainment; it applies to requests with an
	// objective. A request without one is ranked by predicted latency either way.
	Objective string `json:"objective"`
	// TTFTSpread and TPOTSpread are, for ObjectiveAttainment, the standard deviation of
	// ln(actual / predicted) of each latency, how far from its prediction a latency falls, where
	// the producer does not send its own (Prediction.TTFTSpread, TPOTSpread).
	TTFTSpread float64 `json:"ttftSpread"`
	TPOTSpread float64 `json:"tpotSpread"`
	// TTFTShare is, for ObjectiveAttainment, the share of an endpoint's score that the request's
	// predicted TTFT there decides; the rest is its value's shortfall from the best endpoint's. A
	// small share breaks ties by TTFT; a larger one trades expected attainment for a lower TTFT.
	TTFTShare float64 `json:"ttftShare"`
	// TTFTReference is, for ObjectiveAttainment, ReferenceObjective or ReferenceFastest: what the
	// TTFT share measures a predicted TTFT against.
	TTFTReference string `json:"ttftReference"`
	// PlacementCost is, for ObjectiveAttainment, the share of the rise in TPOT that one more
	// placement makes (the producer's after-prediction) that each request in flight on the
	// endpoint is charged: 1 charges all of it, 0 counts no cost to the requests in flight.
	PlacementCost float64 `json:"placementCost"`
	// RunningTPOT is, for ObjectiveAttainment, RunningObserved or RunningPredicted: where the TPOT
	// of the requests in flight on an endpoint comes from when a placement's cost to them counts.
	RunningTPOT string `json:"runningTPOT"`
	// TTFTWeight weighs the TTFT dimension when headrooms or latencies are combined.
	TTFTWeight float64 `json:"ttftWeight"`
	// TPOTWeight weighs the TPOT dimension when headrooms or latencies are combined.
	TPOTWeight float64 `json:"tpotWeight"`
	// HeadroomSelectionStrategy is StrategyLeast or StrategyMost; it applies to endpoints that
	// meet the SLO only, a group that misses it is always ranked with StrategyLeast.
	HeadroomSelectionStrategy string `json:"headroomSelectionStrategy"`
	// SLOBufferFactor scales the TPOT objective before the predicted TPOT is subtracted.
	SLOBufferFactor float64 `json:"sloBufferFactor"`
	// CompositeParams weigh the load heuristics used when no endpoint has a prediction and name
	// their queue signal.
	heuristics.CompositeParams
}

// DefaultParams returns llm-d's latency-scorer defaults: TTFT 0.8, TPOT 0.2, strategy least,
// buffer factor 1, but a fallback of its own: the router's in-flight count and the prefix match,
// weights 1 and 1, without the scraped KV usage (see README.md).
func DefaultParams() Params {
	return Params{
		Objective: ObjectiveHeadroom,
		// A median predictor off by a log-normal factor of spread s has a mean absolute
		// percentage error of E|e^X − 1|, X ~ N(0, s²): 38 % at 0.45 and 43 % at 0.5, the
		// producer's live TTFT and TPOT MAPE on the mooncake trace (39–42 % and 44–54 %,
		// docs/journal/benchmarks-2026-11.md, "Overlapping rounds").
		TTFTSpread:                0.45,
		TPOTSpread:                0.5,
		TTFTShare:                 0.02,
		TTFTReference:             ReferenceObjective,
		PlacementCost:             1,
		RunningTPOT:               RunningPredicted,
		TTFTWeight:                0.8,
		TPOTWeight:                0.2,
		HeadroomSelectionStrategy: StrategyLeast,
		SLOBufferFactor:           1.0,
		CompositeParams:           fallback(),
	}
}

// fallback is the composite on the router's in-flight count and the prefix match.
func fallback() heuristics.CompositeParams {
	return heuristics.CompositeParams{KVCache: 0, Queue: 1, Prefix: 1, QueueSource: heuristics.QueueInflight}
}

// Validate checks every parameter against its accepted range.
func (p *Params) Validate() error {
	if err := sdk.CheckRange("ttftWeight", p.TTFTWeight, 0, 1e3); err != nil {
		return err
	}
	if err := sdk.CheckRange("tpotWeight", p.TPOTWeight, 0, 1e3); err != nil {
		return err
	}
	if p.TTFTWeight+p.TPOTWeight <= 0 {
		return errors.New("at least one of ttftWeight, tpotWeight must be positive")
	}
	if err := sdk.CheckOneOf("headroomSelectionStrategy", p.HeadroomSelectionStrategy, StrategyLeast, StrategyMost); err != nil {
		return err
	}
	if err := sdk.CheckRangeOpenLow("sloBufferFactor", p.SLOBufferFactor, 0, 10); err != nil {
		return err
	}
	if err := sdk.CheckOneOf("objective", p.Objective, ObjectiveHeadroom, ObjectiveAttainment); err != nil {
		return err
	}
	if err := sdk.CheckRangeOpenLow("ttftSpread", p.TTFTSpread, 0, 5); err != nil {
		return err
	}
	if err := sdk.CheckRangeOpenLow("tpotSpread", p.TPOTSpread, 0, 5); err != nil {
		return err
	}
	if err := sdk.CheckRange("ttftShare", p.TTFTShare, 0, 1); err != nil {
		return err
	}
	if err := sdk.CheckOneOf("ttftReference", p.TTFTReference, ReferenceObjective, ReferenceFastest); err != nil {
		return err
	}
	if err := sdk.CheckRange("placementCost", p.PlacementCost, 0, 1); err != nil {
		return err
	}
	if err := sdk.CheckOneOf("runningTPOT", p.RunningTPOT, RunningObserved, RunningPredicted); err != nil {
		return err
	}
	return p.CompositeParams.Validate()
}
