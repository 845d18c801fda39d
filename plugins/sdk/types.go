package sdk

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Stage is one extension point of the scheduling pipeline.
type Stage int

// The stages, in the order a cycle meets them (the admitter runs beside filters and scorers).
const (
	StageUnspecified Stage = iota
	StageProducer
	StageFilter
	StageScorer
	StageAdmitter
	StagePicker
	// StageDetector and StageOrder are flow control's stages: they run only while the router's
	// flowControl section is on, around the pipeline rather than in it.
	StageDetector
	StageOrder
)

var stageNames = [...]string{"unspecified", "producer", "filter", "scorer", "admitter", "picker", "detector", "order"}

// String returns the stage's lower-case name, e.g. "scorer".
func (s Stage) String() string {
	if s < 0 || int(s) >= len(stageNames) {
		return fmt.Sprintf("stage(%d)", int(s))
	}
	return stageNames[s]
}

// ParseStage returns the stage named name ("producer", "filter", "scorer", "admitter", "picker",
// "detector", "order").
func ParseStage(name string) (Stage, error) {
	for i, n := range stageNames[1:] {
		if n == name {
			return Stage(i + 1), nil
		}
	}
	return StageUnspecified, fmt.Errorf("unknown stage %q (want producer, filter, scorer, admitter, picker, detector or order)", name)
}

// Info describes a plugin binary: what it is and which version of it runs.
type Info struct {
	// Type is the kebab-case plugin type, e.g. "latency-scorer"; it must equal the type declared in the config.
	Type string `json:"type"`
	// Stage is the extension point the plugin serves.
	Stage Stage `json:"stage"`
	// Version is the semantic version of the plugin binary, stamped at build time.
	Version string `json:"version"`
	// Description is one line saying what the plugin does.
	Description string `json:"description"`
	// Reads lists the cycle fields the stage reads (see Reader); empty means everything.
	Reads []string `json:"reads,omitempty"`
	// MultiInstance says the process hosts several configured instances of its type (a binary
	// served with ServeInstances): the host then runs one process for every instance of it and may
	// fuse consecutive filters into one call.
	MultiInstance bool `json:"multi_instance,omitempty"`
	// Rounds says a picker places a round's cycles in order (see Round). Every picker served by
	// this SDK does.
	Rounds bool `json:"rounds,omitempty"`
}

// Cycle is the input of one scheduling decision: the request, every candidate endpoint, the decision
// time and a seed. A stage is a function of (cycle, parameters, learned state): it reads the time from
// Now and draws random numbers only from Seed (see Rand), never from the wall clock or a global source.
type Cycle struct {
	Request   Request    `json:"request"`
	Endpoints []Endpoint `json:"endpoints"`
	Now       time.Time  `json:"now"`
	Seed      uint64     `json:"seed"`
	// Excluded lists the fleet's endpoints the host left out of the cycle because they are out
	// of its rotation; it is filled for the stages that read "endpoints.excluded" (or everything)
	// and is not touched by filtering (see ExcludedEndpoint).
	Excluded []ExcludedEndpoint `json:"excluded,omitempty"`
	// Round is set when the host decides this request together with others (see Round); the zero
	// value means the request is decided alone.
	Round Round `json:"round,omitzero"`

	host any // the host's cached wire encoding of the cycle (see transport.Seal)
}

// Subset returns a cycle holding the endpoints of c at positions keep, in that order, with c's
// request, time, seed, round and excluded endpoints (the endpoints are copied; the request and the
// excluded list are shared).
func (c *Cycle) Subset(keep []int) *Cycle {
	n := &Cycle{Request: c.Request, Now: c.Now, Seed: c.Seed, Excluded: c.Excluded, Round: c.Round, Endpoints: make([]Endpoint, len(keep))}
	for i, k := range keep {
		n.Endpoints[i] = c.Endpoints[k]
	}
	return n
}

// Reasons an endpoint of the fleet is out of a cycle (ExcludedEndpoint.Reason).
const (
	// ExcludedUnhealthy: the endpoint stopped answering the router's scrapes or probes.
	ExcludedUnhealthy = "unhealthy"
	// ExcludedEjected: the endpoint answers, but its requests kept failing, so the router set it
	// aside for a while.
	ExcludedEjected = "ejected"
)

// ExcludedEndpoint is an endpoint of the fleet that a cycle does not offer as a candidate because
// it is out of the router's rotation. Filters that judge a whole failure domain (a zone, a node)
// need it: the candidates alone cannot show that a domain has a failing member.
type ExcludedEndpoint struct {
	ID     string            `json:"id"`
	Labels map[string]string `json:"labels,omitempty"`
	// Reason is ExcludedUnhealthy or ExcludedEjected; a host may add reasons, so a stage must
	// not assume it knows them all.
	Reason string `json:"reason"`
}

// Request is what the router knows about the request being scheduled.
type Request struct {
	ID    string `json:"id,omitempty"`
	Model string `json:"model,omitempty"`
	// InputTokens is the estimated prompt length in tokens.
	InputTokens int64 `json:"input_tokens,omitempty"`
	// MaxOutputTokens is the request's max_tokens; 0 when the client set none.
	MaxOutputTokens int64 `json:"max_output_tokens,omitempty"`
	Streaming       bool  `json:"streaming,omitempty"`
	SLO             SLO   `json:"slo,omitempty"`
	// Priority below zero marks the request sheddable; zero and above must be served.
	Priority  int32  `json:"priority,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// PrefixBlockHashes are chained hashes of the prompt's prefix blocks, first block first.
	PrefixBlockHashes []uint64          `json:"prefix_block_hashes,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	// Disaggregation is the request's place in prefill/decode disaggregated serving; the zero
	// value for a request served whole.
	Disaggregation Disaggregation `json:"disaggregation,omitzero"`
}

// Hop is which part of a disaggregated request a cycle decides.
type Hop int32

// The hops.
const (
	// HopWhole is the whole request on one endpoint.
	HopWhole Hop = 0
	// HopPrefill is the prefill hop: the prompt and one output token, its KV then pulled by the
	// decode endpoint. The candidate Disaggregation.DecodeEndpoint would serve the request whole.
	HopPrefill Hop = 1
	// HopDecode is the decode hop: the prompt's KV pulled from a prefill endpoint, then every
	// output token.
	HopDecode Hop = 2
)

// String returns "whole", "prefill" or "decode".
func (h Hop) String() string {
	switch h {
	case HopWhole:
		return "whole"
	case HopPrefill:
		return "prefill"
	case HopDecode:
		return "decode"
	}
	return "Hop(" + strconv.Itoa(int(h)) + ")"
}

// MarshalText writes the hop's name, so traces and snapshots read "prefill", not 1.
func (h Hop) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads a hop's name.
func (h *Hop) UnmarshalText(b []byte) error {
	for _, v := range []Hop{HopWhole, HopPrefill, HopDecode} {
		if string(b) == v.String() {
			*h = v
			return nil
		}
	}
	return fmt.Errorf("hop %q: want whole, prefill or decode", b)
}

// Disaggregation says how a request of a prefill/decode disaggregated fleet is being decided:
// its decode endpoint first (HopDecode), then its prefill endpoint (HopPrefill) among the prefill
// endpoints and, when the router may serve it whole, the decode endpoint itself.
type Disaggregation struct {
	// Hop is the hop the cycle decides.
	Hop Hop `json:"hop,omitempty"`
	// DecodeEndpoint, in a prefill cycle, is the decode endpoint already chosen: that candidate
	// serves the request whole, every other one prefills it for that endpoint.
	DecodeEndpoint string `json:"decode_endpoint,omitempty"`
	// DecodeTTFTMs and DecodeTPOTMs, in a prefill cycle, are the producer's predictions for the
	// decode hop on DecodeEndpoint: its TTFT from its request to its first token (the KV
	// transfer and the first step) and its TPOT; zero when there were none.
	DecodeTTFTMs float64 `json:"decode_ttft_ms,omitempty"`
	DecodeTPOTMs float64 `json:"decode_tpot_ms,omitempty"`
}

// HopOn is the part of the request endpoint id would serve if picked: HopWhole for the decode
// endpoint of a prefill cycle, the cycle's hop otherwise.
func (r *Request) HopOn(id string) Hop {
	d := &r.Disaggregation
	if d.Hop == HopPrefill && id == d.DecodeEndpoint {
		return HopWhole
	}
	return d.Hop
}

// SLO holds a request's latency objectives in milliseconds; zero means no objective.
type SLO struct {
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	TPOTMs float64 `json:"tpot_ms,omitempty"`
}

// Any reports whether the request has a TTFT or a TPOT objective.
func (s SLO) Any() bool { return s.TTFTMs > 0 || s.TPOTMs > 0 }

// Endpoint is one candidate model server with its state and, once a producer ran, its prediction.
type Endpoint struct {
	// ID names the endpoint uniquely within the fleet (usually host:port).
	ID         string            `json:"id"`
	Labels     map[string]string `json:"labels,omitempty"`
	State      EndpointState     `json:"state"`
	Prediction Prediction        `json:"prediction"`
}

// EndpointState is what the router knows of one endpoint at decision time: engine gauges from the
// last scrape (MetricsAgeMs old) and the router's own fresh in-flight accounting, including what it
// dispatched since that scrape (DispatchedSinceScrape).
type EndpointState struct {
	// KVCacheUsage is the engine's KV-cache utilisation in [0, 1].
	KVCacheUsage float64 `json:"kv_cache_usage"`
	// Waiting and Running are the engine's queue and batch gauges from the last scrape.
	Waiting int64 `json:"waiting"`
	Running int64 `json:"running"`
	// InflightRequests counts requests the router dispatched there that have not finished.
	InflightRequests int64 `json:"inflight_requests"`
	// PrefillTokensInFlight sums the uncached prompt tokens dispatched and not yet at first token.
	PrefillTokensInFlight int64 `json:"prefill_tokens_in_flight"`
	// DecodeTokensInFlight sums the output tokens still to generate for requests past first token.
	DecodeTokensInFlight int64 `json:"decode_tokens_in_flight"`
	// PrefixMatch is the fraction of this request's prefix blocks the endpoint is believed to cache, in [0, 1].
	PrefixMatch float64 `json:"prefix_match"`
	// MinRunningTPOTSLOMs is the tightest TPOT objective among requests running there; 0 when none has one.
	MinRunningTPOTSLOMs float64 `json:"min_running_tpot_slo_ms,omitempty"`
	// MetricsAgeMs is how old the scraped gauges are.
	MetricsAgeMs float64 `json:"metrics_age_ms,omitempty"`
	// LastOutputAgeMs is how long ago the router last saw output from the endpoint (a streamed
	// token, a first token or a finished response of any request in flight there), which tells
	// where the engine is in its current step; −1 when the router has nothing in flight there.
	LastOutputAgeMs float64 `json:"last_output_age_ms,omitempty"`
	// DispatchedSinceScrape counts the requests the router dispatched there after the last
	// successful scrape of Waiting, Running and KVCacheUsage and that have not finished: load the
	// scraped gauges do not show yet, because they do not move between two scrapes. Before the
	// first scrape every request in flight there counts.
	DispatchedSinceScrape int64 `json:"dispatched_since_scrape,omitempty"`
	// FirstTokenRate is how many of the router's requests reach their first token there per
	// second: over the last 16 that did, 15 over the time from the first to the last of them; 0
	// until 16 have. The rate the endpoint starts requests at while busy, which turns a count
	// waiting into a time.
	FirstTokenRate float64 `json:"first_token_rate,omitempty"`
	// RunningTPOTMs is the TPOT the router's streams decoding there have seen so far: the mean over
	// those with at least two tokens of (time of the last token − time of the first) / (tokens −
	// 1); 0 when none has. What a placement there delays, as the requests running there live it.
	RunningTPOTMs float64 `json:"running_tpot_ms,omitempty"`
}

// Idle reports whether the router has nothing in flight on the endpoint.
func (s EndpointState) Idle() bool { return s.InflightRequests == 0 }

// Prediction is a producer's estimate of the latency the request would see on one endpoint.
// Stages must treat Valid == false as "no prediction" and ignore the numbers.
type Prediction struct {
	Valid  bool    `json:"valid"`
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	// TPOTMs is 0 when the producer has no TPOT estimate yet (it has seen first tokens but no
	// finished answers): stages treat TPOT as unknown then, not as instant.
	TPOTMs float64 `json:"tpot_ms,omitempty"`
	// TTFTAfterMs and TPOTAfterMs are what the request would see on the endpoint if one more
	// request like it had been placed there first (see PlaceOn); 0 when the producer does not say,
	// which reads as "a placement changes nothing". A producer gives them in a round
	// (Cycle.InRound) and may give them outside rounds too (the project's producer does wherever a
	// latency objective is at stake, so a scorer can weigh what a placement costs the requests
	// already running there): a stage must not assume they are 0 outside rounds.
	TTFTAfterMs float64 `json:"ttft_after_ms,omitempty"`
	TPOTAfterMs float64 `json:"tpot_after_ms,omitempty"`
	// TTFTSpread and TPOTSpread are how far the actual latency is likely to be from TTFTMs and
	// TPOTMs: the standard deviation of ln(actual / predicted) over the producer's recent
	// predictions of that target on the endpoint, the width of the log-normal distribution whose
	// median is the prediction. 0 when the producer does not know (too few samples there, or a
	// producer that does not say).
	TTFTSpread float64 `json:"ttft_spread,omitempty"`
	TPOTSpread float64 `json:"tpot_spread,omitempty"`
}

// Sample is one measurement of a request as the producer learns from it: the request and the
// chosen endpoint's state as they were at dispatch, the prediction made then, and a latency
// observed. A streamed request gives two samples, each measure once: one at its first token
// (ActualTTFTMs only), so the producer learns TTFT while long answers still decode, and one when
// it finishes (ActualTPOTMs and OutputTokens, ActualTTFTMs 0). A zero latency is "not measured
// by this sample".
type Sample struct {
	Request    Request       `json:"request"`
	EndpointID string        `json:"endpoint_id"`
	State      EndpointState `json:"state"`
	Predicted  Prediction    `json:"predicted"`
	// ActualTTFTMs is the time from dispatch to the first token; 0 when not measured here.
	ActualTTFTMs float64 `json:"actual_ttft_ms"`
	// ActualTPOTMs is (last token − first token) / (output tokens − 1); 0 when not measured here
	// or fewer than two tokens.
	ActualTPOTMs float64 `json:"actual_tpot_ms"`
	// OutputTokens is the answer's length, from its usage block; 0 in a first-token sample.
	OutputTokens int64     `json:"output_tokens"`
	DispatchedAt time.Time `json:"dispatched_at"`
}

// AnyPrediction reports whether at least one endpoint of the cycle carries a valid prediction.
func (c *Cycle) AnyPrediction() bool {
	for i := range c.Endpoints {
		if c.Endpoints[i].Prediction.Valid {
			return true
		}
	}
	return false
}

// MarshalText encodes the stage as its name.
func (s Stage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a stage name.
func (s *Stage) UnmarshalText(b []byte) error {
	v, err := ParseStage(string(b))
	*s = v
	return err
}

// Usable reports whether the prediction is valid and both numbers are finite and non-negative.
func (p Prediction) Usable() bool {
	return p.Valid && p.TTFTMs >= 0 && p.TPOTMs >= 0 && !math.IsInf(p.TTFTMs, 0) && !math.IsInf(p.TPOTMs, 0)
}

// ObserveResult is a producer's answer to Observe.
type ObserveResult struct {
	// Accepted is how many of the samples the producer took.
	Accepted int `json:"accepted"`
	// Stats is the producer's prediction quality after taking them; nil if it keeps none.
	Stats *PredictorStats `json:"stats,omitempty"`
}

// PredictorStats describes a learning producer's model and its recent prediction error.
type PredictorStats struct {
	// ModelVersion counts the models put in service (trained or loaded); 0 before the first.
	ModelVersion uint64 `json:"model_version"`
	// TrainingRows is how many rows the model in service was trained on.
	TrainingRows uint64      `json:"training_rows"`
	TTFT         TargetStats `json:"ttft"`
	TPOT         TargetStats `json:"tpot"`
	// Drift is true while the drift guard marks predictions invalid.
	Drift bool `json:"drift"`
}

// TargetStats is the rolling error of one target over recent samples with a valid prediction.
type TargetStats struct {
	Samples uint64 `json:"samples"`
	// MAPE is the mean absolute percentage error as a fraction; MAE the mean absolute error in ms.
	MAPE float64 `json:"mape"`
	MAE  float64 `json:"mae"`
	// QuantileCoverage, for a quantile model, is the fraction of samples at or below the
	// prediction; nil for a mean model.
	QuantileCoverage *float64 `json:"quantile_coverage,omitempty"`
}
