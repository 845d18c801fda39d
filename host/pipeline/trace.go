package pipeline

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Trace records one cycle's decision: every candidate with its state and prediction, each stage's
// verdict, the weighted scores and the pick order. Indices point into Candidates; the JSON form
// names endpoints by id.
type Trace struct {
	RequestID string
	// Profile is the scheduling profile whose pipeline decided (config.Config.Profile).
	Profile string
	Seed    uint64
	Now     time.Time
	// Candidates are the cycle's endpoints as the stages after the producer saw them.
	Candidates []sdk.Endpoint

	Producer *StageTrace
	Filters  []StageTrace
	// Scored are the candidates that reached the scorers; Scorers[i].Scores and Scores align with it.
	Scored  []int
	Scorers []StageTrace
	// Scores are the weighted sums of the clamped scores.
	Scores   []float64
	Admitter *StageTrace
	Picker   *StageTrace

	// Admitted is the admitter's verdict (true without an admitter); Reason explains a rejection
	// or an empty pick.
	Admitted bool
	Reason   string
	// Order holds the picked candidates, best first; the proxy fails over down the list.
	Order    []int
	Duration time.Duration

	// Round is the cycle's place in the round its picker call decided (RunRound); nil for a
	// cycle decided alone.
	Round *RoundTrace

	// Experiment is the slot that holds the pipeline's experiment ("" without one), and Arm the
	// arm that served this cycle there ("" when the slot has only a shadow).
	Experiment string
	Arm        string

	// FlowWait is how long the request waited in the router's flow control queue before this
	// decision dispatched it (0: it did not queue), and FlowVerdict the saturation detector's
	// verdict on this decision's candidates when it left the queue.
	FlowWait    time.Duration
	FlowVerdict string
	// FlowDetector is the saturation detector's call on this decision, and FlowOrder the ordering
	// policy's that gave the request its key in the queue; nil when flow control made none.
	FlowDetector *StageTrace
	FlowOrder    *StageTrace

	// BeyondOrder lists the endpoints the proxy failed over to outside Order, in the order it
	// tried them, and BeyondReason says why it left the order: every endpoint of Order failed
	// before the client got a byte and server.maxAttempts allowed more attempts, so it tried
	// other endpoints with room that the filters had not kept. Empty when it kept to Order.
	BeyondOrder  []string
	BeyondReason string

	// LoadOnly says that the pipeline did not run: a request the router does not read (no body, an
	// API it does not parse) went to the endpoints in the rotation, the fewest of the router's
	// requests in flight first (proxy.Server.RouteOpaque).
	LoadOnly bool
	// UnknownModel says that no endpoint in the rotation listed the request's model, so its
	// candidates were every endpoint in the rotation (server.unknownModels: route).
	UnknownModel bool
	// PrefixFromEvents names the candidates whose prefix match came from their engines' KV-cache
	// events (host/kvindex); the others' came from the router's own record of what it sent them.
	PrefixFromEvents []string

	// Hop is the part of a disaggregated request this decision placed (sdk.HopWhole on a fleet
	// without disaggregation).
	Hop sdk.Hop
	// Prefill is the prefill decision of a disaggregated request whose decode decision this is;
	// nil when none was made. Split says how the request was served — SplitTwoHops, or
	// SplitWhole on its decode endpoint with SplitReason saying why — "" when no prefill
	// decision was due.
	Prefill     *Trace
	Split       string
	SplitReason string
}

// How a disaggregated request was served (Trace.Split).
const (
	SplitTwoHops = "two-hops"
	SplitWhole   = "whole"
)

// StageTrace is one stage call within a cycle.
type StageTrace struct {
	Stage    sdk.Stage
	Plugin   string
	Type     string
	Duration time.Duration
	// Fallback names why the stage's fallback replaced its answer; empty when the plugin answered.
	Fallback string
	// Degraded is, for a producer that failed, where the cycle's predictions came from instead:
	// DegradeReused, DegradePrior or DegradeNone (Reason says more); empty when it answered.
	Degraded string
	// Fused marks a filter reached in one call with the filters beside it that share its process
	// (Duration is then the whole call's).
	Fused  bool
	Reason string
	Kept   []int     // filters: the candidates kept
	Weight float64   // scorers
	Scores []float64 // scorers: clamped, unweighted, aligned with Trace.Scored
	// After holds, for a cycle in a round, a scorer's clamped, unweighted after-scores (sdk.AfterScores),
	// aligned with Trace.Scored; nil where it gave none.
	After    []float64
	Admitted bool  // admitter
	Order    []int // picker
}

// Outcome summarises the decision: "picked", "rejected" or "no candidates".
func (t *Trace) Outcome() string {
	switch {
	case !t.Admitted:
		return "rejected"
	case len(t.Order) == 0:
		return "no candidates"
	default:
		return "picked"
	}
}

// OrderIDs returns the picked endpoint ids, best first.
func (t *Trace) OrderIDs() []string { return t.ids(t.Order) }

func (t *Trace) ids(idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = t.Candidates[j].ID
	}
	return out
}

func (t *Trace) scoreMap(scores []float64) map[string]float64 {
	if scores == nil {
		return nil
	}
	m := make(map[string]float64, len(scores))
	for i, v := range scores {
		m[t.Candidates[t.Scored[i]].ID] = v
	}
	return m
}

type stageJSON struct {
	Stage      sdk.Stage          `json:"stage"`
	Plugin     string             `json:"plugin"`
	Type       string             `json:"type"`
	DurationUs int64              `json:"duration_us"`
	Fallback   string             `json:"fallback,omitempty"`
	Degraded   string             `json:"degraded,omitempty"`
	Fused      bool               `json:"fused,omitempty"`
	Reason     string             `json:"reason,omitempty"`
	Kept       []string           `json:"kept,omitempty"`
	Weight     float64            `json:"weight,omitempty"`
	Scores     map[string]float64 `json:"scores,omitempty"`
	After      map[string]float64 `json:"scores_after,omitempty"`
	Admitted   *bool              `json:"admitted,omitempty"`
	Order      []string           `json:"order,omitempty"`
}

func (t *Trace) stageView(s *StageTrace) stageJSON {
	v := stageJSON{Stage: s.Stage, Plugin: s.Plugin, Type: s.Type, DurationUs: s.Duration.Microseconds(),
		Fallback: s.Fallback, Degraded: s.Degraded, Fused: s.Fused, Reason: s.Reason}
	switch s.Stage {
	case sdk.StageFilter:
		v.Kept = t.ids(s.Kept)
	case sdk.StageScorer:
		v.Weight, v.Scores, v.After = s.Weight, t.scoreMap(s.Scores), t.scoreMap(s.After)
	case sdk.StageAdmitter:
		v.Admitted = &s.Admitted
	case sdk.StagePicker:
		v.Order = t.ids(s.Order)
	}
	return v
}

// Stages returns the cycle's stage calls in the order they ran: producer, filters, scorers,
// admitter, picker (those the pipeline has), then flow control's ordering policy and saturation
// detector, when they were called.
func (t *Trace) Stages() []*StageTrace {
	out := make([]*StageTrace, 0, 3+len(t.Filters)+len(t.Scorers))
	add := func(s *StageTrace) {
		if s != nil {
			out = append(out, s)
		}
	}
	add(t.Producer)
	for i := range t.Filters {
		add(&t.Filters[i])
	}
	for i := range t.Scorers {
		add(&t.Scorers[i])
	}
	add(t.Admitter)
	add(t.Picker)
	add(t.FlowOrder)
	add(t.FlowDetector)
	return out
}

// MarshalJSON writes the trace with endpoints named by id and stages in the order they ran.
func (t *Trace) MarshalJSON() ([]byte, error) {
	var stages []stageJSON
	for _, s := range t.Stages() {
		stages = append(stages, t.stageView(s))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // reasons hold ">=" and "<"; keep them readable
	err := enc.Encode(struct {
		RequestID   string             `json:"request_id,omitempty"`
		Profile     string             `json:"profile,omitempty"`
		Seed        uint64             `json:"seed"`
		Now         time.Time          `json:"now"`
		Outcome     string             `json:"outcome"`
		Reason      string             `json:"reason,omitempty"`
		Order       []string           `json:"order"`
		Scores      map[string]float64 `json:"scores,omitempty"`
		Stages      []stageJSON        `json:"stages"`
		Round       *RoundTrace        `json:"round,omitempty"`
		Candidates  []sdk.Endpoint     `json:"candidates"`
		DurationUs  int64              `json:"duration_us"`
		FlowWaitMs  float64            `json:"flow_wait_ms,omitempty"`
		FlowVerdict string             `json:"flow_verdict,omitempty"`
		Beyond      []string           `json:"beyond_order,omitempty"`
		BeyondWhy   string             `json:"beyond_order_reason,omitempty"`
		LoadOnly    bool               `json:"load_only,omitempty"`
		Unknown     bool               `json:"unknown_model,omitempty"`
		FromEvents  []string           `json:"prefix_from_events,omitempty"`
		Hop         sdk.Hop            `json:"hop,omitempty"`
		Split       string             `json:"split,omitempty"`
		SplitReason string             `json:"split_reason,omitempty"`
		Prefill     *Trace             `json:"prefill,omitempty"`
	}{t.RequestID, t.Profile, t.Seed, t.Now, t.Outcome(), t.Reason, t.OrderIDs(), t.scoreMap(t.Scores), stages, t.Round, t.Candidates,
		t.Duration.Microseconds(), float64(t.FlowWait) / float64(time.Millisecond), t.FlowVerdict, t.BeyondOrder, t.BeyondReason,
		t.LoadOnly, t.UnknownModel, t.PrefixFromEvents, t.Hop, t.Split, t.SplitReason, t.Prefill})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}
