package loadgen

import (
	"time"

	"github.com/foresight-router/foresight/sim/workload"
)

// Kind is how a request ended.
type Kind int

// The kinds of outcome. Every request sent ends in exactly one.
const (
	// OK is a 200 whose answer arrived whole (a streamed answer up to its [DONE]).
	OK Kind = iota
	// Shed is a 429: the router's admitter refused the request.
	Shed
	// ClientError is any other 4xx (a bad request, an unknown objective, a prompt too long).
	ClientError
	// ServerError is a 5xx (no endpoint reachable, upstream timeout, an engine's error).
	ServerError
	// ConnError is a request that got no response: the connection failed or broke before the
	// status line.
	ConnError
	// StreamError is a 200 whose body broke off or could not be read as an answer.
	StreamError
	// Cut is a request cancelled by the run: its context ended or the drain time ran out.
	Cut
)

var kindNames = [...]string{"ok", "shed", "4xx", "5xx", "conn", "stream", "cut"}

// String returns the kind's short name: ok, shed, 4xx, 5xx, conn, stream, cut.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "unknown"
	}
	return kindNames[k]
}

// Result is one request as the client saw it. Times are measured from the moment the request
// was handed to the HTTP client, so a dispatcher running late does not inflate them.
type Result struct {
	// ID is the workload request's ID.
	ID uint64
	// Target is the index in Options.Targets of the API the request went to (0 with BaseURL).
	Target int
	// Objective is the request's objective (ObjectiveInteractive or ObjectiveBatch, or its class
	// with Options.ClassObjectives), sent in x-llm-d-inference-objective unless
	// Options.OmitObjective.
	Objective string
	// SLO is the objective sent in the SLO headers; Streamed whether the answer was asked as a
	// stream.
	SLO      workload.SLO
	Streamed bool
	// Kind is how the request ended; Status its HTTP status (0 without a response).
	Kind   Kind
	Status int
	// Err describes what went wrong for every kind but OK (the error body's message for an HTTP
	// error, the transport's error otherwise).
	Err string
	// RequestID is the response's x-request-id (the router generates one per request).
	RequestID string
	// Sent is when the request was sent, since the start of the run.
	Sent time.Duration
	// TTFT is the time to the first content chunk of a stream, or to the whole body of an answer
	// that was not streamed; 0 when no content arrived.
	TTFT time.Duration
	// TPOT is (last − first content chunk) / (completion tokens − 1) for a stream with at least
	// two tokens; 0 otherwise (an answer that was not streamed has no per-token times).
	TPOT time.Duration
	// E2E is the time to the end of the answer (OK only).
	E2E time.Duration
	// PromptTokens, CompletionTokens and CachedTokens are the usage block's counts (0 without one).
	PromptTokens, CompletionTokens, CachedTokens int
}

// HasSLO reports whether the request carried an objective.
func (r *Result) HasSLO() bool { return r.SLO.TTFTMs > 0 || r.SLO.TPOTMs > 0 }

// MetSLO reports whether the request met every objective it had, as the routing bench counts it
// (sim/stats): it must have ended OK, within its TTFT objective, and within its TPOT objective
// unless it produced fewer than two tokens or was not streamed. A request without objectives
// that ended OK meets them. Shed and failed requests miss.
func (r *Result) MetSLO() bool {
	if r.Kind != OK {
		return false
	}
	if r.SLO.TTFTMs > 0 && ms(r.TTFT) > r.SLO.TTFTMs {
		return false
	}
	return r.SLO.TPOTMs <= 0 || r.TPOT <= 0 || ms(r.TPOT) <= r.SLO.TPOTMs
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
