// Package engine models one LLM inference server, in two families that share one interface:
//
//   - the batch family (Batch) reproduces a vLLM V1 engine step by step: continuous batching
//     under max_num_seqs and a per-step token budget with chunked prefill, a paged KV cache of
//     fixed-size blocks with prefix caching and LRU eviction, preemption by recompute when blocks
//     run out, and step times from the BLIS "blackbox" α/β latency model with optional noise and
//     a per-server speed factor;
//   - the slot family (Slot) reproduces the latency model of llm-d-inference-sim: MaxNumSeqs
//     independent slots fed by a FIFO queue, a per-token TTFT and a constant inter-token latency
//     both scaled by a load factor that grows with the occupied slots, Gaussian jitter, and an
//     LRU prefix block cache.
//
// Both serve prefill/decode disaggregation: a Request with RemotePrefill is the decode half of a
// request whose prompt another server computed; the engine pulls the prompt's KV, at the cost
// Config.KVTransfer gives, instead of computing it.
//
// Time is a time.Duration since the start of the simulation, so the same Engine runs in virtual
// time (a discrete-event cluster calls Step at NextStep) and in real time (an emulator sleeps
// until NextStep, calls Step, and replays the events at their times). Both models are
// deterministic: the same Config (Seed included), requests and call times give the same events.
// README.md gives the source of every rule and constant and lists what is simplified.
package engine

import (
	"fmt"
	"time"
)

// Engine is one simulated server of either family. New returns the one its Config selects.
// Methods are not safe for concurrent use.
type Engine interface {
	// Add accepts a request arriving at now, or says why the server would reject it.
	Add(r Request, now time.Duration) error
	// Step runs the engine's next step — for the batch family one forward pass starting at
	// max(now, NextStep()), for the slot family every event due at NextStep() — and reports its
	// events with their exact times. On an idle engine it does nothing and returns
	// Start = End = now. StepResult.Events is valid until the next Step.
	Step(now time.Duration) StepResult
	// NextStep is when the next Step has something to do; −1 when idle.
	NextStep() time.Duration
	// Busy reports whether the engine holds any request.
	Busy() bool
	// Abort removes request id wherever it is, without an event, and reports whether it was there.
	Abort(id uint64) bool
	// Metrics returns the engine's vLLM gauges and counters as of its last step.
	Metrics() Metrics
	// Clock is the time of the engine's last step: the end of the last forward pass (batch) or
	// the last instant whose events were processed (slot); 0 before the first.
	Clock() time.Duration
	// Config returns the engine's configuration.
	Config() Config
	// ExpectStepTimes makes later durations take their expected values, without noise or
	// jitter: an oracle calls it inside Speculate so as not to foresee randomness no router can.
	ExpectStepTimes()
	// Speculate calls f with the engine itself and afterwards restores it exactly, as if f had
	// never run (same later events, metrics and random draws). Not nestable. Nothing f does
	// is logged as a cache event, and the cache-event log is as before the call.
	Speculate(f func(Engine))
	// RecordCacheEvents turns the cache-event log on (it is off by default): every block hash
	// that becomes findable as a prefix hit logs a CacheStored event, every hash that stops
	// being findable a CacheRemoved. Inside Speculate it does nothing.
	RecordCacheEvents()
	// TakeCacheEvents appends the cache events logged since the last call to dst, in order, and
	// returns it. Inside Speculate it appends nothing.
	TakeCacheEvents(dst []CacheEvent) []CacheEvent
}

// Family names an engine model.
type Family string

// The engine families.
const (
	// FamilyBatch is the vLLM-like batch engine (Batch); an empty Family means it too.
	FamilyBatch Family = "batch"
	// FamilySlot is the llm-d-inference-sim-like slot engine (Slot).
	FamilySlot Family = "slot"
)

// New returns an idle engine of cfg's family, or an error naming every invalid Config field.
func New(cfg Config) (Engine, error) {
	switch cfg.Family {
	case "", FamilyBatch:
		e, err := NewBatch(cfg)
		if err != nil {
			return nil, err
		}
		return e, nil
	case FamilySlot:
		e, err := NewSlot(cfg)
		if err != nil {
			return nil, err
		}
		return e, nil
	}
	return nil, fmt.Errorf("invalid engine config: family must be %q or %q, got %q", FamilyBatch, FamilySlot, cfg.Family)
}

var (
	_ Engine = (*Batch)(nil)
	_ Engine = (*Slot)(nil)
)
