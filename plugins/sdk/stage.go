package sdk

import (
	"context"
	"time"
)

// Plugin is what every stage implementation is: a typed, configurable component.
//
// Configure is called before the first stage call and may be called again later with new
// parameters; implementations must make the swap safe against concurrent stage calls.
// Stage methods may be called concurrently.
type Plugin interface {
	// Type returns the kebab-case plugin type, e.g. "latency-scorer".
	Type() string
	// Description returns one line saying what the plugin does.
	Description() string
	// Configure merges params (a JSON object, possibly empty) over the plugin's defaults and
	// validates the result; an invalid parameter is an error naming it and the accepted range.
	Configure(params []byte) error
}

// Producer adds latency predictions to every endpoint of a cycle and learns from finished requests.
type Producer interface {
	Plugin
	// Produce returns one prediction per endpoint of c, in c.Endpoints order.
	Produce(ctx context.Context, c *Cycle) ([]Prediction, error)
	// Observe takes finished-request samples and returns how many it accepted and, for a
	// learning producer, its prediction quality.
	Observe(ctx context.Context, samples []Sample) (ObserveResult, error)
}

// Filter narrows the candidate endpoints.
type Filter interface {
	Plugin
	// Filter returns the indices into c.Endpoints it keeps, in ascending order, and why.
	Filter(ctx context.Context, c *Cycle) (FilterVerdict, error)
}

// FilterVerdict is a filter's answer for one cycle.
type FilterVerdict struct {
	// Kept holds indices into the cycle's endpoints.
	Kept []int `json:"kept"`
	// Reason says in a few words why these were kept, e.g. "sticky: 2 endpoints with prefix >= 0.80".
	Reason string `json:"reason,omitempty"`
}

// Scorer rates the candidate endpoints.
type Scorer interface {
	Plugin
	// Score returns one score in [0, 1] per endpoint of c, in c.Endpoints order; higher is better.
	Score(ctx context.Context, c *Cycle) ([]float64, error)
}

// Admitter decides whether a request is served at all.
type Admitter interface {
	Plugin
	// Admit returns the verdict for c's request.
	Admit(ctx context.Context, c *Cycle) (AdmitVerdict, error)
}

// UnsheddableAdmitter is an Admitter that can say, for the parameters in force, that it admits
// every request of priority 0 or above (not sheddable) without reading anything else of its cycle
// and keeps no state from those requests. The SDK asks after each Configure and tells the host
// (ConfigureResponse.admits_unsheddable), which then admits those requests without calling it: one
// plugin round trip fewer per request that cannot be shed.
type UnsheddableAdmitter interface {
	Admitter
	AdmitsUnsheddable() bool
}

// AdmitVerdict is an admitter's answer for one cycle.
type AdmitVerdict struct {
	Admitted bool   `json:"admitted"`
	Reason   string `json:"reason,omitempty"`
}

// Picker orders the candidate endpoints by preference.
type Picker interface {
	Plugin
	// Pick returns indices into c.Endpoints, best first; scores[i] is the weighted score of
	// c.Endpoints[i]. Returning every index lets the proxy fail over down the list.
	Pick(ctx context.Context, c *Cycle, scores []float64) ([]int, error)
}

// Detector is flow control's saturation detector: which endpoints have room for a request now. A
// request for which none has room waits in the router and is decided again when one has.
type Detector interface {
	Plugin
	// Detect returns the verdict for c's request on c's endpoints.
	Detect(ctx context.Context, c *Cycle) (SaturationVerdict, error)
}

// SaturationVerdict is a detector's answer for one cycle.
type SaturationVerdict struct {
	// Room holds one count per endpoint of the cycle, in its order: how many more of the router's
	// requests the endpoint takes now before it is full; 0: full.
	Room []int `json:"room"`
	// WaitMs estimates how long the request would wait before its prefill starts were it
	// dispatched now: 0 when some endpoint has room, negative when unknown.
	WaitMs float64 `json:"wait_ms"`
	// Reason says in a few words why every endpoint is full, e.g. "engines-full"; empty otherwise.
	Reason string `json:"reason,omitempty"`
	// Slots, when the detector believes it knows them, holds one count per endpoint, in the
	// cycle's order: how many requests the endpoint runs at once (a slot engine's slots, vLLM's
	// max_num_seqs); 0 for one it does not know. Empty: none known. The router reports them
	// (foresight_flow_endpoint_slots) and acts on Room alone.
	Slots []int `json:"slots,omitempty"`
}

// Saturated reports whether no endpoint has room.
func (v SaturationVerdict) Saturated() bool {
	for _, r := range v.Room {
		if r > 0 {
			return false
		}
	}
	return true
}

// Orderer is flow control's ordering policy: the key by which a request waits in the router's
// queue. It is asked once, when the request enters the queue; c.Now is the request's arrival.
type Orderer interface {
	Plugin
	// Order returns c's request's key.
	Order(ctx context.Context, c *Cycle) (OrderKey, error)
}

// OrderKey is a queued request's place in its flow: bands (priorities) first, flows in turn
// within a band, then, within a flow, the requests that are not hopeless by Rank, then the
// hopeless ones by Rank; equal ranks leave in arrival order.
type OrderKey struct {
	// Rank: lower leaves first, e.g. the arrival (FCFS) or the TTFT deadline (EDF) in Unix
	// nanoseconds.
	Rank int64 `json:"rank"`
	// HopelessAfter, when not zero: the request is hopeless once the host's estimate of the wait,
	// added to the time, passes it.
	HopelessAfter time.Time `json:"hopeless_after,omitzero"`
	// Flow is the fairness flow; empty: the one the host's flowControl.flowKey names.
	Flow string `json:"flow,omitempty"`
}

// Reader is implemented by a stage that reads only part of the cycle. Reads returns the paths of
// the fields it reads; the host then leaves every other field out of the cycles it sends, which
// makes the stage's calls cheaper to encode and decode. A stage without Reads receives everything.
// Reads also order the calls: a filter among the pipeline's first whose reads leave out
// "endpoints.predictions" is called beside the producer rather than after it.
//
// The paths are "request" (every request field but the prefix block hashes, which a long prompt
// makes the bulk of a cycle and which the host has already turned into each endpoint's
// PrefixMatch), "request.prefix_block_hashes", "endpoints.count" (nothing but the number of
// endpoints), "endpoints.ids", "endpoints.labels", "endpoints.states" (every state column),
// "endpoints.states.<column>" where <column> is an EndpointState field by its JSON name (e.g.
// "endpoints.states.prefix_match"), "endpoints.predictions", and "endpoints.excluded" (Cycle.Excluded);
// transport.ReadPaths lists them.
// The cycle's Now, Seed and Round and the endpoint count are always sent, and so are the endpoint
// ids of a cycle in a round (the SDK tells the round's endpoints apart by them, see PickRound).
// The predictions' after and spread columns (Prediction.TTFTAfterMs, TPOTAfterMs, TTFTSpread,
// TPOTSpread) come with "endpoints.predictions".
//
// Declaring too little makes the stage see zeros: check a declaration in the stage's tests with
// sdktest.CheckReads.
type Reader interface {
	Reads() []string
}
