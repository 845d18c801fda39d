package engine

import "time"

// Prefill/decode disaggregation in the batch family: a Request with RemotePrefill is the decode
// half of a request whose prompt a prefill server computed. vLLM's NIXL connector serves it so:
// at its first scheduling the request looks up its local prefix cache, allocates the blocks of
// its whole prompt and pulls the ones it lacks from the prefill server, asynchronously; the
// scheduler parks it meanwhile (WAITING_FOR_REMOTE_KVS, in its skipped-waiting queue), then
// registers the blocks for prefix caching and runs it with all but its last prompt token
// computed, so that its first step computes that one token and samples the first output token.
// README.md gives the sources.

// startTransfer admits waiting[0], a remote-prefill request, whose longest cached prefix is
// hits: it takes the blocks of its whole prompt, the hits first, and waits for the KV of the
// prompt tokens it lacks until start + transferTime. It schedules no token and spends no budget;
// prefix-cache queries and hits count as for any first admission. It fails, changing nothing,
// when the blocks do not fit, which stops admission as any allocation failure does.
func (e *Batch) startTransfer(r *reqState, hits []int32, start time.Duration) bool {
	hitTokens := len(hits) * e.cfg.BlockSize
	if !e.allocateBlocks(r, hits, r.numTokens) {
		return false
	}
	e.countQuery(r, hitTokens)
	r.computed = hitTokens
	r.kvReady = start + e.transferTime(r.numTokens-hitTokens)
	e.transfers = append(e.transfers, *r)
	e.waiting[0] = reqState{}
	e.waiting = e.waiting[1:]
	return true
}

// transferTime is Config.KVTransfer for tokens pulled: its latency plus its per-token time for
// each. It is a network cost: neither Speed nor the step-time noise apply.
func (e *Batch) transferTime(tokens int) time.Duration {
	k := e.cfg.KVTransfer
	return k.Latency + time.Duration(tokens)*k.PerToken
}

// promote moves the requests whose transfer has ended by start into the running batch, in the
// order they started, while budget remains and fewer than MaxNumSeqs run: vLLM's FCFS scheduler
// serves its skipped-waiting queue before its waiting queue. Each one's prompt blocks are
// registered for prefix caching now (vLLM delays caching them until the KV has arrived), its
// computed tokens become all but the last prompt token, which it computes in this step as a
// decode (countTokens), and its cached tokens are those computed tokens, as vLLM's
// num_cached_tokens counts what the connector loaded. It returns the budget left.
func (e *Batch) promote(start time.Duration, budget int) int {
	w := 0
	for j := range e.transfers {
		r := &e.transfers[j]
		if r.kvReady > start || budget == 0 || len(e.running) >= e.cfg.MaxNumSeqs {
			if w != j {
				e.transfers[w] = *r
			}
			w++
			continue
		}
		r.computed = r.numTokens - 1
		if r.cached < 0 {
			r.cached = r.computed
		}
		e.allocate(r, nil, 1) // the prompt's blocks are all there: it registers them and cannot fail
		e.running = append(e.running, *r)
		e.sched = append(e.sched, 1)
		budget--
	}
	clear(e.transfers[w:])
	e.transfers = e.transfers[:w]
	return budget
}

// countQuery counts r's first admission in the prefix cache counters: its tokens looked up and
// the hitTokens found (a resumed preempted request is not counted, as in vLLM).
func (e *Batch) countQuery(r *reqState, hitTokens int) {
	if r.preemptions == 0 {
		e.queries += int64(r.numTokens)
		e.hits += int64(hitTokens)
	}
}
