package engine

import (
	"fmt"
	"time"
)

// Request is one completion request as the engine sees it.
type Request struct {
	// ID identifies the request in events. IDs must be unique among the requests an engine
	// holds; generated blocks without OutputBlocks are hashed from it.
	ID uint64
	// InputTokens is the prompt length (≥ 1).
	InputTokens int
	// OutputTokens is the number of tokens the request generates before it finishes (≥ 1).
	OutputTokens int
	// Blocks are the chained hashes of the prompt's full BlockSize-token blocks, in order: block
	// i's hash identifies tokens [0, (i+1)·BlockSize). A partial last block has no hash. Shorter
	// than InputTokens/BlockSize (or nil) means the remaining full blocks are unique to this
	// request. The engine keeps the slice; do not modify it afterwards.
	Blocks []uint64
	// OutputBlocks optionally continues Blocks: the hashes of the full blocks that prompt plus
	// output complete beyond the prompt's full blocks (so a follow-up turn whose prompt contains
	// this answer hits them). Without it, generated blocks are unique to the request.
	OutputBlocks []uint64
	// RemotePrefill marks the decode half of a disaggregated request: a prefill server has
	// computed the prompt, and this engine pulls its KV (Config.KVTransfer) instead of computing
	// any prompt token, then decodes (vLLM's kv_transfer_params.do_remote_prefill). The prefill
	// half needs no flag: it is an ordinary request with OutputTokens 1.
	RemotePrefill bool
}

// EventKind says what happened to a request.
type EventKind uint8

// The events a step reports.
const (
	// FirstToken is the first output token; Time − arrival is the TTFT.
	FirstToken EventKind = iota + 1
	// Token is each later output token.
	Token
	// Finish follows the event of the last output token, at the same time.
	Finish
	// Preempted means the request lost its KV blocks and went back to the head of the waiting
	// queue; it will recompute its prompt and output so far (with whatever prefix hits remain).
	Preempted
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case FirstToken:
		return "first-token"
	case Token:
		return "token"
	case Finish:
		return "finish"
	case Preempted:
		return "preempted"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is something that happened to one request during a step.
type Event struct {
	Kind EventKind
	ID   uint64
	// Time is when the client sees the event. For the k-th output token it is the end of the
	// step that produced it plus k·α2 (BLIS's non-blocking per-token output overhead); Finish
	// carries the time of the last token; Preempted carries the step's start.
	Time time.Duration
	// Tokens is the number of output tokens generated so far.
	Tokens int
	// CachedTokens is the number of prompt tokens the prefix cache served when the request was
	// first scheduled (usage.prompt_tokens_details.cached_tokens). Recomputes after a
	// preemption do not change it.
	CachedTokens int
}

// StepResult is what one engine step did.
type StepResult struct {
	// Start and End bound the step; End is when the engine can run the next one.
	Start, End time.Duration
	// PrefillTokens and DecodeTokens are the uncached prompt (or recompute) tokens and the
	// decode tokens the step computed, the inputs of the step-time formula.
	PrefillTokens, DecodeTokens int
	// Events are in scheduling order. The slice is reused: it is valid until the next Step.
	Events []Event
}

// Metrics is a snapshot of the gauges and counters vLLM exports, as of the end of the last step
// (vLLM updates them once per engine step too).
type Metrics struct {
	// Waiting is vllm:num_requests_waiting: requests in the scheduler's waiting queue,
	// including preempted ones and remote-prefill requests waiting for their KV.
	Waiting int
	// Running is vllm:num_requests_running.
	Running int
	// Pending counts requests added but still in their α0+α1·input pre-processing delay, not
	// yet in the waiting queue (vLLM does not count these either).
	Pending int
	// KVCacheUsage is vllm:kv_cache_usage_perc in [0, 1]: the share of usable blocks (all
	// but the null block) referenced by requests. Cached but unreferenced blocks count as free.
	KVCacheUsage float64
	// NumGPUBlocks and BlockSize are vllm:cache_config_info's labels.
	NumGPUBlocks int
	BlockSize    int
	// PrefixCacheQueries and PrefixCacheHits are vllm:prefix_cache_queries and
	// vllm:prefix_cache_hits: prompt tokens looked up and found, counted when a request is
	// first scheduled (resumed preempted requests are not counted, as in vLLM).
	PrefixCacheQueries int64
	PrefixCacheHits    int64
	// Preemptions is vllm:num_preemptions.
	Preemptions int64
}

// appendToken appends the events of a request's token number generated (of output) at t:
// FirstToken for the first, Token for the others, and Finish after the last; done reports the
// last.
func appendToken(events []Event, id uint64, t time.Duration, generated, output, cached int) (_ []Event, done bool) {
	ev := Event{Kind: Token, ID: id, Time: t, Tokens: generated, CachedTokens: cached}
	if generated == 1 {
		ev.Kind = FirstToken
	}
	events = append(events, ev)
	if generated == output {
		ev.Kind = Finish
		events = append(events, ev)
		return events, true
	}
	return events, false
}
