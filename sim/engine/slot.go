package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// Slot is the slot family's engine, llm-d-inference-sim's latency model: MaxNumSeqs independent
// slots fed by a FIFO queue. A request that takes a slot gets its first token after
// (PrefillOverhead + uncached prompt tokens × PrefillTimePerToken) × f(running) and each later
// token InterTokenLatency × f(running) after the previous one, with Gaussian jitter; f grows
// linearly from 1 (one request running) to TimeFactorUnderLoad (every slot occupied); a
// remote-prefill request's first token comes after its KV transfer instead (transferTime). Its
// prompt blocks go through an LRU prefix block cache. Each Step processes one instant: every event due
// then. README.md gives the formulas, when the load is read and what is simplified. Its methods
// are not safe for concurrent use.
type Slot struct {
	cfg     Config
	rng     uint64 // splitmix64 state of the jitter
	jitter  bool   // false after ExpectStepTimes
	clock   time.Duration
	queue   []slotReq // FIFO, by arrival
	running []slotReq // in admission order
	cache   slotCache

	// After an Abort frees a slot that a queued request could take, the next Step admits no
	// earlier than its now: the engine does not know when the abort happened.
	abortFreed bool
	admitFloor time.Duration

	queries, hits int64
	events        []Event
	absent        []int // admit's scratch
	spec          slotSpec
}

// slotReq is a request in the queue or in a slot.
type slotReq struct {
	id            uint64
	arrival       time.Duration
	input, output int
	prompt        []uint64
	cached        int           // prompt tokens the cache served at admission
	generated     int           // output tokens so far
	next          time.Duration // when its next token is due; −1 while a duration is to be drawn
	blocks        []int32       // cache entries it references, as acquired; never modified
	remote        bool          // its prompt's KV is transferred from a prefill server
}

// slotSpec is what Speculate saves.
type slotSpec struct {
	active             bool
	rng                uint64
	jitter, abortFreed bool
	clock, admitFloor  time.Duration
	queries, hits      int64
	queue, running     []slotReq
	qBuf, rBuf         []slotReq
	events, eventBuf   []Event
}

// NewSlot returns an idle slot engine, or an error naming every invalid Config field. cfg's
// Family must be FamilySlot.
func NewSlot(cfg Config) (*Slot, error) {
	if cfg.Family != FamilySlot {
		return nil, fmt.Errorf("invalid engine config: NewSlot needs family %q, got %q", FamilySlot, cfg.Family)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid engine config: %w", err)
	}
	return &Slot{cfg: cfg, rng: cfg.Seed, jitter: true, cache: newSlotCache(cfg.NumGPUBlocks)}, nil
}

// Config returns the engine's configuration.
func (e *Slot) Config() Config { return e.cfg }

// Clock returns the last instant whose events Step processed (0 before the first).
func (e *Slot) Clock() time.Duration { return e.clock }

// Add queues a request arriving at now (at Clock() if now is earlier: the engine cannot act in
// the past). It takes a slot at the next Step if one is free. Add rejects an empty prompt or
// output, more hashes than full prompt blocks, and prompt plus output above MaxModelLen.
// OutputBlocks are ignored: llm-d-inference-sim caches prompt blocks only.
func (e *Slot) Add(r Request, now time.Duration) error {
	bs := e.cfg.BlockSize
	var err error
	switch {
	case r.InputTokens < 1:
		err = fmt.Errorf("input tokens must be at least 1, got %d", r.InputTokens)
	case r.OutputTokens < 1:
		err = fmt.Errorf("output tokens must be at least 1, got %d", r.OutputTokens)
	case len(r.Blocks) > r.InputTokens/bs:
		err = fmt.Errorf("%d prompt block hashes, but %d input tokens fill only %d blocks of %d",
			len(r.Blocks), r.InputTokens, r.InputTokens/bs, bs)
	case e.cfg.MaxModelLen > 0 && r.InputTokens+r.OutputTokens > e.cfg.MaxModelLen:
		err = fmt.Errorf("%d input + %d output tokens exceed max_model_len %d", r.InputTokens, r.OutputTokens, e.cfg.MaxModelLen)
	}
	if err != nil {
		return fmt.Errorf("adding request %d: %w", r.ID, err)
	}
	e.queue = append(e.queue, slotReq{id: r.ID, arrival: max(now, e.clock), input: r.InputTokens,
		output: r.OutputTokens, prompt: r.Blocks, next: -1, remote: r.RemotePrefill})
	return nil
}

// Abort removes request id from the queue or its slot, releasing its cache blocks (they stay
// cached, unused). It emits no event and reports whether the request was there.
func (e *Slot) Abort(id uint64) bool {
	if i := slices.IndexFunc(e.queue, func(r slotReq) bool { return r.id == id }); i >= 0 {
		e.queue = slices.Delete(e.queue, i, i+1)
		return true
	}
	i := slices.IndexFunc(e.running, func(r slotReq) bool { return r.id == id })
	if i < 0 {
		return false
	}
	e.release(&e.running[i])
	e.running = slices.Delete(e.running, i, i+1)
	e.abortFreed = len(e.queue) > 0
	return true
}

// Busy reports whether the engine holds any request.
func (e *Slot) Busy() bool { return len(e.queue)+len(e.running) > 0 }

// NextStep returns the next instant something is due: a token of a running request, or a
// queued request taking a free slot (at its arrival); −1 when idle.
func (e *Slot) NextStep() time.Duration {
	t := time.Duration(-1)
	for i := range e.running {
		if n := e.running[i].next; t < 0 || n < t {
			t = n
		}
	}
	if len(e.queue) > 0 && len(e.running) < e.cfg.MaxNumSeqs {
		if a := max(e.queue[0].arrival, e.admitFloor); t < 0 || a < t {
			t = a
		}
	}
	return t
}

// Step processes the instant T = NextStep() (now only matters after an Abort, see README.md):
// first the tokens due at T (a request's last token finishes it and frees its slot), then queued
// requests take free slots in FIFO order, then every duration started at T is drawn with the
// load f(running) of the slots occupied after those changes: each admitted request's time to
// first token (its transfer time for a remote-prefill request) and each continuing request's
// time to its next token. The result has Start = End = T; PrefillTokens counts the uncached
// prompt tokens of the prefills started at T (none for a remote-prefill request, whose prompt is
// not computed here) and DecodeTokens the tokens emitted at T.
func (e *Slot) Step(now time.Duration) StepResult {
	e.events = e.events[:0]
	if e.abortFreed {
		e.admitFloor, e.abortFreed = max(e.admitFloor, now, e.clock), false
	}
	t := e.NextStep()
	if t < 0 {
		return StepResult{Start: now, End: now}
	}
	res := StepResult{Start: t, End: t}
	mark := len(e.cache.log)
	w := 0
	for j := range e.running {
		r := &e.running[j]
		if r.next == t {
			r.generated++
			res.DecodeTokens++
			var done bool
			if e.events, done = appendToken(e.events, r.id, t, r.generated, r.output, r.cached); done {
				e.release(r)
				continue
			}
			r.next = -1
		}
		if w != j {
			e.running[w] = *r
		}
		w++
	}
	clear(e.running[w:])
	e.running = e.running[:w]
	for len(e.queue) > 0 && len(e.running) < e.cfg.MaxNumSeqs && max(e.queue[0].arrival, e.admitFloor) <= t {
		r := e.queue[0]
		e.queue[0] = slotReq{}
		e.queue = e.queue[1:]
		e.admit(&r)
		if !r.remote {
			res.PrefillTokens += r.input - r.cached
		}
		e.running = append(e.running, r)
	}
	n := len(e.running)
	for j := range e.running {
		if r := &e.running[j]; r.next < 0 {
			switch {
			case r.generated == 0 && r.remote:
				r.next = t + e.transferTime(r.input)
			case r.generated == 0:
				r.next = t + e.prefillTime(r.input-r.cached, n)
			default:
				r.next = t + e.interTokenTime(n)
			}
		}
	}
	e.clock = t
	if e.cache.rec {
		e.cache.stamp(mark, t)
	}
	res.Events = e.events
	return res
}

// admit looks r's full prompt blocks up in the cache and stores the missing ones, as
// llm-d-inference-sim does when a request starts: blocks found gain a reference, new blocks
// evict the least recently used unused block when the cache is full, and when every block is
// in use the remaining ones are not stored. Cached tokens are the leading run of blocks found.
func (e *Slot) admit(r *slotReq) {
	bs := e.cfg.BlockSize
	nb := r.input / bs
	r.blocks = make([]int32, 0, nb)
	e.absent = e.absent[:0]
	leading := true
	for j := range nb {
		i := e.cache.lookup(r.hashAt(j, bs))
		if i < 0 {
			leading = false
			e.absent = append(e.absent, j)
			continue
		}
		e.cache.acquire(i)
		r.blocks = append(r.blocks, i)
		if leading {
			r.cached += bs
		}
	}
	for _, j := range e.absent {
		h := r.hashAt(j, bs)
		i := e.cache.lookup(h) // found when the prompt repeats a hash stored just before
		if i >= 0 {
			e.cache.acquire(i)
		} else if i = e.cache.store(h); i < 0 {
			break
		} else if e.cache.rec {
			e.cache.stored(r.id, j, h, r.hashAt(max(j-1, 0), e.cfg.BlockSize))
		}
		r.blocks = append(r.blocks, i)
	}
	e.queries += int64(r.input)
	e.hits += int64(r.cached)
}

// release drops r's references, last block first, so that its tail blocks are evicted before
// its head blocks, which other prompts are likelier to share.
func (e *Slot) release(r *slotReq) {
	for j := len(r.blocks) - 1; j >= 0; j-- {
		e.cache.release(r.blocks[j])
	}
	r.blocks = nil
}

// hashAt is the hash of r's prompt block j: the caller's hash, else one unique to the request.
func (r *slotReq) hashAt(j, bs int) uint64 {
	if j < len(r.prompt) {
		return r.prompt[j]
	}
	return splitmix.Mix(splitmix.Mix(r.id^0x5eed) + uint64(j))
}

// Metrics returns the engine's vLLM metrics: Waiting is the queue, Running the occupied slots,
// KVCacheUsage the blocks in use over the cache's capacity.
func (e *Slot) Metrics() Metrics {
	return Metrics{
		Waiting:            len(e.queue),
		Running:            len(e.running),
		KVCacheUsage:       float64(e.cache.used) / float64(e.cfg.NumGPUBlocks),
		NumGPUBlocks:       e.cfg.NumGPUBlocks,
		BlockSize:          e.cfg.BlockSize,
		PrefixCacheQueries: e.queries,
		PrefixCacheHits:    e.hits,
	}
}

// ExpectStepTimes turns the jitter off: later durations take their (load-scaled, truncated)
// means. Speculate restores it when f returns; on any other engine it lasts.
func (e *Slot) ExpectStepTimes() { e.jitter = false }

// loadFactor is f(n) = 1 + (TimeFactorUnderLoad − 1)·(n − 1)/(MaxNumSeqs − 1), 1 with one slot.
func (e *Slot) loadFactor(n int) float64 {
	if e.cfg.MaxNumSeqs <= 1 {
		return 1
	}
	return 1 + (e.cfg.Slot.TimeFactorUnderLoad-1)*float64(n-1)/float64(e.cfg.MaxNumSeqs-1)
}

// prefillTime is the time to first token of a prefill of uncached tokens started with n slots
// occupied. As llm-d-inference-sim does, the overhead and the per-token time are each scaled
// (here by f(n)·Speed) and truncated to the nanosecond before they are added up.
func (e *Slot) prefillTime(uncached, n int) time.Duration {
	s, f := e.cfg.Slot, e.loadFactor(n)*e.cfg.Speed
	mean := scale(s.PrefillOverhead, f) + time.Duration(uncached)*scale(s.PrefillTimePerToken, f)
	return e.sample(mean, scale(s.PrefillTimeStdDev, e.cfg.Speed))
}

// transferTime is llm-d-inference-sim's time to first token of a remote-prefill request of
// prompt tokens: the KV transfer latency when it or its std-dev is set, else the per-token
// transfer time × every prompt token (cached or not: the whole KV crosses the wire), each with
// its jitter. Neither the load factor nor Speed scale it: it is a network cost.
func (e *Slot) transferTime(prompt int) time.Duration {
	k, s := e.cfg.KVTransfer, e.cfg.Slot
	if k.Latency != 0 || s.KVCacheTransferLatencyStdDev != 0 {
		return e.sample(k.Latency, s.KVCacheTransferLatencyStdDev)
	}
	return e.sample(time.Duration(prompt)*k.PerToken, s.KVCacheTransferTimeStdDev)
}

// interTokenTime is the time to the next token of a request, drawn with n slots occupied.
func (e *Slot) interTokenTime(n int) time.Duration {
	s := e.cfg.Slot
	return e.sample(scale(s.InterTokenLatency, e.loadFactor(n)*e.cfg.Speed), scale(s.InterTokenLatencyStdDev, e.cfg.Speed))
}

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// sample is llm-d-inference-sim's jittered duration in units of Resolution (1 ns when 0): the
// mean and std-dev are truncated to whole units, a normal draw (none when the std-dev is 0 or
// the jitter is off) is clamped to [0.3, 1.7] × mean and truncated again. It is at least 1 ns,
// so that every event comes strictly after the one that scheduled it.
func (e *Slot) sample(mean, std time.Duration) time.Duration {
	unit := max(e.cfg.Slot.Resolution, 1)
	m, sd := float64(mean/unit), float64(std/unit)
	v := m
	if sd > 0 && e.jitter {
		v = min(max(m+sd*e.normal(), 0.3*m), 1.7*m)
	}
	return max(time.Duration(v)*unit, 1)
}

// normal draws a standard normal by Box–Muller from the splitmix64 stream, using one of the pair.
func (e *Slot) normal() float64 {
	e.rng += splitmix.Gamma
	u1 := (float64(splitmix.Mix(e.rng)>>11) + 1) / (1 << 53) // (0, 1]
	e.rng += splitmix.Gamma
	u2 := float64(splitmix.Mix(e.rng)>>11) / (1 << 53) // [0, 1)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}
