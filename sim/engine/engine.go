package engine

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// reqState is a request inside the engine, in vLLM's terms: numTokens = prompt + generated
// tokens, computed = tokens whose KV is computed (or scheduled this step).
type reqState struct {
	id          uint64
	ready       time.Duration // when it reaches the waiting queue
	input       int
	output      int
	prompt      []uint64
	outBlocks   []uint64
	numTokens   int
	computed    int
	generated   int
	cached      int // prefix-hit tokens at first admission; −1 before
	preemptions int
	blocks      []int32       // block table; append-only while held, dropped (never reused) on free
	numCached   int           // leading blocks registered in the hash table
	remote      bool          // its prompt's KV comes from a prefill server (until a preemption)
	kvReady     time.Duration // while in transfers: when its prompt's KV has arrived
}

// Batch is the batch family's engine: one simulated vLLM server with continuous batching, a
// per-step token budget with chunked prefill, a paged KV cache with prefix caching and
// preemption, BLIS α/β step times, and remote-prefill requests whose prompt KV it pulls from a
// prefill server (transfer.go). Its methods are not safe for concurrent use, except that
// several goroutines may Clone the same Batch at once while nothing else uses it.
type Batch struct {
	cfg        Config
	tokenDelay time.Duration // α2
	kv         kvCache
	noise      noise
	clock      time.Duration // end of the last step

	pending   []reqState // ordered by ready time, then arrival
	waiting   []reqState // FCFS; preempted requests go to the front
	running   []reqState // in admission order
	transfers []reqState // waiting for their remote KV, holding their blocks; in admission order
	// stalled: the last step scheduled nothing although requests wait, because requests in
	// transfer hold the blocks the first of them needs; only a transfer's end changes that.
	stalled bool

	queries, hits, preemptions int64

	// Scratch reused across steps.
	sched  []int // tokens scheduled this step, parallel to running
	hitBuf []int32
	events []Event

	spec specState // Speculate's saved state and reusable buffers
}

// specState is what Speculate saves to restore an engine: its scalar state, the request queues'
// slice headers and contents, and the caller's events slice.
type specState struct {
	active, stalled                      bool
	noise                                noise
	clock                                time.Duration
	queries, hits, preemptions           int64
	pending, waiting, running, transfers []reqState // the headers as they were
	pBuf, wBuf, rBuf, tBuf               []reqState // their contents
	events, eventBuf                     []Event
}

// NewBatch returns an idle batch engine, or an error naming every invalid Config field. cfg's
// Family must be FamilyBatch (or empty).
func NewBatch(cfg Config) (*Batch, error) {
	if cfg.Family != "" && cfg.Family != FamilyBatch {
		return nil, fmt.Errorf("invalid engine config: NewBatch needs family %q, got %q", FamilyBatch, cfg.Family)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid engine config: %w", err)
	}
	e := &Batch{
		cfg:        cfg,
		tokenDelay: micros(cfg.Coefficients.Alpha[2]),
		noise:      newNoise(cfg.Noise, cfg.Seed),
	}
	e.kv.init(cfg.NumGPUBlocks)
	return e, nil
}

// Config returns the engine's configuration.
func (e *Batch) Config() Config { return e.cfg }

// Clock returns the end of the last step (0 before the first).
func (e *Batch) Clock() time.Duration { return e.clock }

// Add accepts a request arriving at now. It becomes schedulable α0 + α1·InputTokens later (BLIS's
// queueing delay). Add rejects, with the reason, a request vLLM would reject: empty prompt or
// output, more hashes than full blocks, longer than MaxModelLen, or larger than the whole KV cache.
func (e *Batch) Add(r Request, now time.Duration) error {
	if err := e.check(r); err != nil {
		return fmt.Errorf("adding request %d: %w", r.ID, err)
	}
	a := e.cfg.Coefficients.Alpha
	q := reqState{
		id:        r.ID,
		ready:     now + micros(a[0]+a[1]*float64(r.InputTokens)),
		input:     r.InputTokens,
		output:    r.OutputTokens,
		prompt:    r.Blocks,
		outBlocks: r.OutputBlocks,
		numTokens: r.InputTokens,
		cached:    -1,
		remote:    r.RemotePrefill,
	}
	i := len(e.pending)
	for i > 0 && e.pending[i-1].ready > q.ready {
		i--
	}
	e.pending = slices.Insert(e.pending, i, q)
	return nil
}

func (e *Batch) check(r Request) error {
	bs := e.cfg.BlockSize
	total := r.InputTokens + r.OutputTokens
	switch {
	case r.InputTokens < 1:
		return fmt.Errorf("input tokens must be at least 1, got %d", r.InputTokens)
	case r.OutputTokens < 1:
		return fmt.Errorf("output tokens must be at least 1, got %d", r.OutputTokens)
	case len(r.Blocks) > r.InputTokens/bs:
		return fmt.Errorf("%d prompt block hashes, but %d input tokens fill only %d blocks of %d",
			len(r.Blocks), r.InputTokens, r.InputTokens/bs, bs)
	case len(r.OutputBlocks) > total/bs-r.InputTokens/bs:
		return fmt.Errorf("%d output block hashes, but prompt and output complete only %d blocks beyond the prompt's",
			len(r.OutputBlocks), total/bs-r.InputTokens/bs)
	case e.cfg.MaxModelLen > 0 && total > e.cfg.MaxModelLen:
		return fmt.Errorf("%d input + %d output tokens exceed max_model_len %d", r.InputTokens, r.OutputTokens, e.cfg.MaxModelLen)
	}
	// The last output token is never fed back, so a request holds at most total−1 tokens of KV.
	if need := ceilDiv(total-1, bs); need > int(e.kv.usable()) {
		return fmt.Errorf("%d tokens need %d KV blocks, but the cache has %d", total, need, e.kv.usable())
	}
	return nil
}

// Abort removes request id wherever it is (pending, waiting, in transfer or running) and frees
// its blocks, which stay cached for later prefix hits, as vLLM's abort_requests does when a client
// disconnects. It emits no event and reports whether the request was there. Call it between
// steps.
func (e *Batch) Abort(id uint64) bool {
	for _, q := range []*[]reqState{&e.pending, &e.waiting, &e.transfers, &e.running} {
		for i := range *q {
			if r := &(*q)[i]; r.id == id {
				e.free(r)
				*q = slices.Delete(*q, i, i+1)
				e.stalled = false
				return true
			}
		}
	}
	return false
}

// Busy reports whether the engine holds any request (pending, waiting, in transfer or running).
func (e *Batch) Busy() bool {
	return len(e.pending)+len(e.waiting)+len(e.transfers)+len(e.running) > 0
}

// NextStep returns when the next step can start: the end of the last step while requests run or
// can be admitted, else the first time a transfer ends or a pending request becomes
// schedulable; −1 when idle.
func (e *Batch) NextStep() time.Duration {
	if len(e.running) > 0 || (len(e.waiting) > 0 && (!e.stalled || len(e.transfers) == 0)) {
		return e.clock
	}
	next := time.Duration(-1)
	at := func(t time.Duration) {
		if t = max(t, e.clock); next < 0 || t < next {
			next = t
		}
	}
	for i := range e.transfers {
		at(e.transfers[i].kvReady)
	}
	if len(e.pending) > 0 {
		at(e.pending[0].ready)
	}
	return next
}

// Step runs one engine step starting at max(now, NextStep()). It moves requests whose queueing
// delay has passed into the waiting queue, schedules running requests first and then waiting
// ones (vLLM V1's Scheduler.schedule), advances the clock by the step time and reports what the
// step produced. On an idle engine it does nothing and returns Start = End = now.
func (e *Batch) Step(now time.Duration) StepResult {
	e.events = e.events[:0]
	next := e.NextStep()
	if next < 0 {
		return StepResult{Start: now, End: now}
	}
	start := max(now, next)
	for len(e.pending) > 0 && e.pending[0].ready <= start {
		e.waiting = append(e.waiting, e.pending[0])
		e.pending[0] = reqState{}
		e.pending = e.pending[1:]
	}
	mark := len(e.kv.log)
	e.schedule(start)
	prefill, decode := e.countTokens()
	end := start
	if prefill+decode > 0 {
		end += e.stepTime(prefill, decode)
	}
	e.clock = end
	e.complete(end)
	if e.kv.rec { // the step's cache events are published at its end, as vLLM does
		e.kv.stamp(mark, end)
	}
	return StepResult{Start: start, End: end, PrefillTokens: prefill, DecodeTokens: decode, Events: e.events}
}

// schedule fills e.sched. Running requests go first, in order, each asking for all its
// uncomputed tokens (1 for a decode, the next chunk for a prefill) up to the remaining budget;
// when the KV cache cannot hold them, the most recently admitted running request is preempted
// until they fit or the request itself was the one preempted. Only if nothing was preempted,
// while there is budget and fewer than MaxNumSeqs run, requests whose transfer has ended join
// (promote), then waiting requests are admitted FCFS, each with its longest cached prefix; the
// first that does not fit stops admission. A remote-prefill request's admission allocates its
// prompt's blocks and starts its transfer instead of scheduling tokens (startTransfer).
func (e *Batch) schedule(start time.Duration) {
	budget := e.cfg.MaxNumBatchedTokens
	e.sched = e.sched[:0]
	e.stalled = false
	preempted := false
running:
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := &e.running[i]
		n := min(r.numTokens-r.computed, budget)
		for !e.allocate(r, nil, n) {
			victim := len(e.running) - 1
			e.preempt(victim, start)
			preempted = true
			if victim == i {
				break running
			}
		}
		e.sched = append(e.sched, n)
		budget -= n
	}
	for len(e.sched) < len(e.running) {
		e.sched = append(e.sched, 0) // left over when the budget ran out
	}
	if preempted {
		return
	}
	budget = e.promote(start, budget)
	bs := e.cfg.BlockSize
	for len(e.waiting) > 0 && budget > 0 && len(e.running) < e.cfg.MaxNumSeqs {
		r := &e.waiting[0]
		hits := e.findHits(r)
		hitTokens := len(hits) * bs
		if r.remote {
			if !e.startTransfer(r, hits, start) {
				break
			}
			continue
		}
		n := min(r.numTokens-hitTokens, budget)
		r.computed = hitTokens
		if !e.allocate(r, hits, n) {
			r.computed = 0
			break
		}
		e.countQuery(r, hitTokens)
		if r.cached < 0 {
			r.cached = hitTokens
		}
		e.running = append(e.running, *r)
		e.sched = append(e.sched, n)
		budget -= n
		e.waiting[0] = reqState{}
		e.waiting = e.waiting[1:]
	}
	// Nothing runs and the first waiting request does not fit: the blocks it needs are held by
	// requests in transfer (with none, an idle cache holds any request), so only the end of a
	// transfer (or an abort) can let it in.
	e.stalled = len(e.running) == 0 && len(e.waiting) > 0
}

// preempt frees the blocks of running[i], which must be the last running request, and puts it
// at the front of the waiting queue to recompute later (vLLM's _preempt_request).
func (e *Batch) preempt(i int, t time.Duration) {
	r := &e.running[i]
	e.free(r)
	r.computed, r.numCached = 0, 0
	r.remote = false // vLLM's NIXL connector pulls once; the resumed request recomputes locally
	r.preemptions++
	e.preemptions++
	e.events = append(e.events, Event{Kind: Preempted, ID: r.id, Time: t, Tokens: r.generated, CachedTokens: max(r.cached, 0)})
	e.waiting = slices.Insert(e.waiting, 0, *r)
	e.running[i] = reqState{}
	e.running = e.running[:i]
}

// countTokens splits the scheduled tokens into the step formula's two kinds. A decode is one
// token of a request whose other tokens are all computed and that has output or pulled its
// prompt's KV (whose last prompt token is computed as the first decode, as vLLM does after a
// transfer); everything else — prompt chunks and the recompute of a preempted request — is
// prefill.
func (e *Batch) countTokens() (prefill, decode int) {
	for j, n := range e.sched {
		r := &e.running[j]
		switch {
		case n == 0:
		case n == 1 && (r.generated > 0 || r.remote) && r.computed == r.numTokens-1:
			decode++
		default:
			prefill += n
		}
	}
	return prefill, decode
}

// stepTime is the BLIS step time scaled by the speed factor and the noise, at least 1 ns so that
// time always advances.
func (e *Batch) stepTime(prefill, decode int) time.Duration {
	b := e.cfg.Coefficients.Beta
	us := (b[0] + b[1]*float64(prefill) + b[2]*float64(decode)) * e.cfg.Speed * e.noise.factor()
	return max(micros(us), 1)
}

// complete applies the step's results at its end: scheduled tokens become computed; a request
// whose tokens are all computed samples its next token; one that reached its output length
// finishes and frees its blocks.
func (e *Batch) complete(end time.Duration) {
	w := 0
	for j := range e.running {
		r := &e.running[j]
		if n := e.sched[j]; n > 0 {
			r.computed += n
			if r.computed == r.numTokens {
				r.generated++
				r.numTokens++
				var done bool
				if e.events, done = appendToken(e.events, r.id, end+time.Duration(r.generated)*e.tokenDelay, r.generated, r.output, r.cached); done {
					e.free(r)
					continue
				}
			}
		}
		if w != j {
			e.running[w] = *r
		}
		w++
	}
	clear(e.running[w:])
	e.running = e.running[:w]
}

// Metrics returns the engine's vLLM metrics as of the end of the last step.
func (e *Batch) Metrics() Metrics {
	return Metrics{
		Waiting:            len(e.waiting) + len(e.transfers),
		Running:            len(e.running),
		Pending:            len(e.pending),
		KVCacheUsage:       float64(e.kv.referenced()) / float64(e.kv.usable()),
		NumGPUBlocks:       e.cfg.NumGPUBlocks,
		BlockSize:          e.cfg.BlockSize,
		PrefixCacheQueries: e.queries,
		PrefixCacheHits:    e.hits,
		Preemptions:        e.preemptions,
	}
}

func micros(us float64) time.Duration { return time.Duration(math.Round(us * 1e3)) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ExpectStepTimes makes e's later steps take their expected time, the noise factor's mean of 1,
// instead of drawing it. An oracle simulating forward inside Speculate calls it so as not to
// foresee the noise, which no router can (on an idle engine the next draw never changes, so an
// oracle that saw it would shun that engine for as long as the draw was unlucky). Speculate
// restores the noise when f returns; on a clone or any other engine it lasts.
func (e *Batch) ExpectStepTimes() { e.noise.sigma = 0 }
