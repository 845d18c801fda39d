package engine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pdConfig is testConfig (step = 1000 + 10·prefill + 1·decode µs, no overheads) with a KV
// transfer of 2 ms + 10 µs per token pulled.
func pdConfig() Config {
	cfg := testConfig()
	cfg.KVTransfer = KVTransfer{Latency: 2 * time.Millisecond, PerToken: 10 * time.Microsecond}
	return cfg
}

// stepAll steps e until it is idle and returns every step (with a private copy of its events),
// failing when a step starts before the previous one ended or the engine spins in place.
func stepAll(t *testing.T, e *Batch) []StepResult {
	t.Helper()
	steps := drain(t, e)
	for i := 1; i < len(steps); i++ {
		if steps[i].Start < steps[i-1].End {
			t.Fatalf("step %d starts at %v, before the previous one ended at %v", i, steps[i].Start, steps[i-1].End)
		}
		if i >= 2 && steps[i].Start == steps[i-2].Start && steps[i].End == steps[i].Start {
			t.Fatalf("steps %d–%d: empty steps at %v: the engine spins", i-2, i, steps[i].Start)
		}
	}
	return steps
}

// TestRemotePrefillTTFT: a remote-prefill request computes none of its prompt; it holds its
// prompt's blocks while its KV arrives (waiting, not running), and its first token comes from the
// first step after the transfer, a one-token decode.
func TestRemotePrefillTTFT(t *testing.T) {
	e := newEngine(t, pdConfig())
	add(t, e, Request{ID: 1, InputTokens: 100, OutputTokens: 3, RemotePrefill: true}, 0)
	s := e.Step(e.NextStep())
	if s.Start != 0 || s.End != 0 || s.PrefillTokens+s.DecodeTokens != 0 || len(s.Events) != 0 {
		t.Fatalf("the admitting step %+v, want an empty step at 0", s)
	}
	// 7 blocks of 16 for the 100-token prompt, of 100 usable; waiting for its KV, not running.
	if m := e.Metrics(); m.Waiting != 1 || m.Running != 0 || m.KVCacheUsage != 0.07 {
		t.Fatalf("during the transfer: %+v, want 1 waiting, 0 running, 7 %% of the KV cache", m)
	}
	// 2 ms + 100 · 10 µs.
	if got := e.NextStep(); got != 3*time.Millisecond {
		t.Fatalf("next step at %v, want the transfer's end, 3ms", got)
	}
	steps := stepAll(t, e)
	want := []Event{
		{Kind: FirstToken, ID: 1, Time: us(3000 + 1001), Tokens: 1, CachedTokens: 99},
		{Kind: Token, ID: 1, Time: us(3000 + 2*1001), Tokens: 2, CachedTokens: 99},
		{Kind: Token, ID: 1, Time: us(3000 + 3*1001), Tokens: 3, CachedTokens: 99},
		{Kind: Finish, ID: 1, Time: us(3000 + 3*1001), Tokens: 3, CachedTokens: 99},
	}
	if diff := cmp.Diff(want, events(steps)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for i, s := range steps {
		if s.PrefillTokens != 0 || s.DecodeTokens != 1 {
			t.Errorf("step %d computed %d prefill and %d decode tokens, want 0 and 1", i, s.PrefillTokens, s.DecodeTokens)
		}
	}
	if m := e.Metrics(); m.PrefixCacheQueries != 100 || m.PrefixCacheHits != 0 || m.KVCacheUsage != 0 {
		t.Errorf("after: %+v, want 100 tokens queried, none hit, no block held", m)
	}
	checkKV(t, e)
}

// TestRemotePrefillLocalHits: the prompt tokens found in the local prefix cache are not pulled,
// which shortens the transfer; the blocks pulled become prefix hits only once the KV is there.
func TestRemotePrefillLocalHits(t *testing.T) {
	prompt := seqHashes(1, 6) // 100 tokens: 6 full blocks
	ttft := func(warm bool) time.Duration {
		e := newEngine(t, pdConfig())
		if warm {
			add(t, e, Request{ID: 9, InputTokens: 100, OutputTokens: 1, Blocks: prompt}, 0)
			drain(t, e)
		}
		at := e.Clock()
		add(t, e, Request{ID: 1, InputTokens: 100, OutputTokens: 1, Blocks: prompt, RemotePrefill: true}, at)
		queries, hits := e.Metrics().PrefixCacheQueries, e.Metrics().PrefixCacheHits
		ev := find(t, events(drain(t, e)), FirstToken, 1)
		if m := e.Metrics(); m.PrefixCacheQueries-queries != 100 || m.PrefixCacheHits-hits != map[bool]int64{false: 0, true: 96}[warm] {
			t.Errorf("warm %v: %d queried and %d hit tokens", warm, m.PrefixCacheQueries-queries, m.PrefixCacheHits-hits)
		}
		return ev.Time - at
	}
	// Cold: 2 ms + 100 · 10 µs, then a 1001 µs decode. Warm: 96 tokens hit (the last token's
	// block is never a hit), 4 pulled: 2 ms + 40 µs.
	if cold, warm := ttft(false), ttft(true); cold != us(3000+1001) || warm != us(2040+1001) {
		t.Errorf("TTFT cold %v, warm %v; want %v and %v", cold, warm, us(4001), us(3041))
	}

	// A request with the same prompt admitted during the transfer finds none of the pulled
	// blocks (vLLM caches them when the KV has arrived); one admitted afterwards finds them.
	e := newEngine(t, pdConfig())
	add(t, e, Request{ID: 1, InputTokens: 100, OutputTokens: 1, Blocks: prompt, RemotePrefill: true}, 0)
	e.Step(0)
	add(t, e, Request{ID: 2, InputTokens: 100, OutputTokens: 1, Blocks: prompt}, 0)
	e.Step(0)
	if h := e.Metrics().PrefixCacheHits; h != 0 {
		t.Errorf("a request admitted during the transfer hit %d tokens, want 0", h)
	}
	drain(t, e)
	add(t, e, Request{ID: 3, InputTokens: 100, OutputTokens: 1, Blocks: prompt}, e.Clock())
	drain(t, e)
	if h := e.Metrics().PrefixCacheHits; h != 96 {
		t.Errorf("a request admitted after the transfer hit %d tokens, want 96", h)
	}
	checkKV(t, e)
}

// TestRemotePrefillMaxNumSeqs: requests in transfer do not count as running (vLLM keeps them in
// its waiting queues), so several start in one step, but only while a seat is free, and each
// runs only when one is.
func TestRemotePrefillMaxNumSeqs(t *testing.T) {
	cfg := pdConfig()
	cfg.MaxNumSeqs = 2
	e := newEngine(t, cfg)
	add(t, e, Request{ID: 1, InputTokens: 16, OutputTokens: 30}, 0)
	for id := uint64(2); id <= 4; id++ {
		add(t, e, Request{ID: id, InputTokens: 16, OutputTokens: 2, RemotePrefill: true}, 0)
	}
	e.Step(0) // request 1 prefills (1160 µs); 2, 3, 4 start their transfers (2.16 ms)
	if m := e.Metrics(); m.Running != 1 || m.Waiting != 3 || len(e.transfers) != 3 {
		t.Fatalf("after the first step: %+v, %d in transfer; want 1 running, 3 waiting in transfer", m, len(e.transfers))
	}
	for e.Clock() < 2160*time.Microsecond {
		e.Step(e.NextStep())
	}
	e.Step(e.NextStep()) // the first step after the transfers: one seat, for request 2
	if m := e.Metrics(); m.Running != 2 || m.Waiting != 2 {
		t.Fatalf("after the transfers: %+v, want 2 running (1 and 2), 2 waiting", m)
	}
	evs := events(drain(t, e))
	// Request 2 finishes two decodes later; 3 then takes its seat, and 4 takes 3's.
	if f2, t3, t4 := find(t, evs, Finish, 2).Time, find(t, evs, FirstToken, 3).Time, find(t, evs, FirstToken, 4).Time; !(f2 < t3 && t3 < t4) {
		t.Errorf("request 2 finished at %v, 3 and 4 started at %v and %v: want one after the other", f2, t3, t4)
	}
}

// TestRemotePrefillStall: requests in transfer can hold the blocks a waiting request needs while
// nothing runs; the engine then waits for the transfer's end rather than spinning in place.
func TestRemotePrefillStall(t *testing.T) {
	cfg := pdConfig()
	cfg.NumGPUBlocks = 9 // 8 usable
	e := newEngine(t, cfg)
	add(t, e, Request{ID: 1, InputTokens: 100, OutputTokens: 1, RemotePrefill: true}, 0) // 7 blocks
	add(t, e, Request{ID: 2, InputTokens: 40, OutputTokens: 1}, 0)                       // 3 blocks
	e.Step(0)
	if got := e.NextStep(); got != 3*time.Millisecond {
		t.Fatalf("next step %v while request 2 cannot fit, want 3ms (the transfer's end)", got)
	}
	steps := stepAll(t, e)
	// At 3 ms request 1 decodes its one token (1001 µs) and frees its blocks; then request 2
	// prefills (1400 µs).
	if got := find(t, events(steps), FirstToken, 2).Time; got != us(3000+1001+1400) {
		t.Errorf("request 2's first token at %v, want %v", got, us(5401))
	}
	if len(steps) != 2 {
		t.Errorf("%d steps after the stall, want 2", len(steps))
	}
}

// TestRemotePrefillPreemption: a remote-prefill request preempted after its transfer recomputes
// its prompt and output locally, charged as prefill (vLLM's NIXL connector pulls once).
func TestRemotePrefillPreemption(t *testing.T) {
	cfg := pdConfig()
	cfg.BlockSize = 4
	cfg.NumGPUBlocks = 7 // 6 usable blocks of 4 tokens
	e := newEngine(t, cfg)
	add(t, e, Request{ID: 1, InputTokens: 4, OutputTokens: 12}, 0)
	add(t, e, Request{ID: 2, InputTokens: 8, OutputTokens: 6, RemotePrefill: true}, 0)
	steps := stepAll(t, e)
	evs := events(steps)
	pre := find(t, evs, Preempted, 2)
	prefill := 0
	for _, s := range steps {
		if s.Start > pre.Time {
			prefill += s.PrefillTokens
		}
	}
	// Its 8 prompt tokens and the output it had, less what its cached blocks still give.
	if prefill == 0 {
		t.Errorf("request 2, preempted after %d tokens, recomputed nothing as prefill", pre.Tokens)
	}
	if f := find(t, evs, Finish, 2); f.Tokens != 6 {
		t.Errorf("request 2 finished with %d tokens, want 6", f.Tokens)
	}
	checkKV(t, e)
}

// TestPrefillDecodeHalves runs a disaggregated request's two halves on two engines: the prefill
// half (OutputTokens 1) computes the prompt and finishes with its one token; the decode half
// computes no prompt token.
func TestPrefillDecodeHalves(t *testing.T) {
	p, d := newEngine(t, pdConfig()), newEngine(t, pdConfig())
	add(t, p, Request{ID: 1, InputTokens: 40, OutputTokens: 1}, 0)
	ps := stepAll(t, p)
	// One step: 1000 + 10·40 µs; first token and finish together.
	want := []Event{{Kind: FirstToken, ID: 1, Time: us(1400), Tokens: 1}, {Kind: Finish, ID: 1, Time: us(1400), Tokens: 1}}
	if diff := cmp.Diff(want, events(ps)); diff != "" || len(ps) != 1 || ps[0].PrefillTokens != 40 {
		t.Errorf("prefill half: %d steps, events (-want +got):\n%s", len(ps), diff)
	}
	add(t, d, Request{ID: 1, InputTokens: 40, OutputTokens: 4, RemotePrefill: true}, us(1400))
	prefill, decode := 0, 0
	for _, s := range stepAll(t, d) {
		prefill, decode = prefill+s.PrefillTokens, decode+s.DecodeTokens
	}
	if prefill != 0 || decode != 4 {
		t.Errorf("decode half computed %d prefill and %d decode tokens, want 0 and 4", prefill, decode)
	}
}

// pdWorkload is workload with every third request the decode half of a disaggregated request.
func pdWorkload(t testing.TB, e *Batch, n int, idBase uint64) {
	t.Helper()
	for i := range n {
		in := 20 + (i*37)%300
		add(t, e, Request{ID: idBase + uint64(i), InputTokens: in, OutputTokens: 5 + (i*13)%60,
			Blocks: seqHashes(uint64(i%5)*1000, in/16), RemotePrefill: i%3 == 0}, time.Duration(i)*2*time.Millisecond)
	}
}

// TestRemotePrefillDeterminismAndClone: with remote-prefill requests in the mix (and noise,
// preemptions, stalls), the same inputs give the same events, a clone taken with transfers in
// flight reproduces its original, and driving the clone leaves the original unchanged.
func TestRemotePrefillDeterminismAndClone(t *testing.T) {
	cfg := pdConfig()
	cfg.NumGPUBlocks = 60
	cfg.Noise, cfg.Seed = 0.2, 4
	build := func() *Batch {
		e := newEngine(t, cfg)
		pdWorkload(t, e, 150, 0)
		for len(e.transfers) == 0 {
			e.Step(e.NextStep())
		}
		return e
	}
	a, b := build(), build()
	c := a.Clone()
	pdWorkload(t, c, 100, 10000) // driven hard, then discarded
	evsC := events(stepAll(t, c))
	evsA, evsB := events(stepAll(t, a)), events(stepAll(t, b))
	if diff := cmp.Diff(evsB, evsA); diff != "" {
		t.Fatalf("the original diverged from its twin after its clone ran (-twin +original):\n%s", diff)
	}
	if m := a.Metrics(); m.Preemptions == 0 {
		t.Errorf("no preemption: the workload is too easy: %+v", m)
	}
	d := build()
	pdWorkload(t, d, 100, 10000)
	if diff := cmp.Diff(evsC, events(stepAll(t, d))); diff != "" {
		t.Fatalf("the clone diverged from an engine given the same inputs (-clone +engine):\n%s", diff)
	}
	checkKV(t, a)
}

// TestSpeculateRemotePrefill: speculating a remote-prefill arrival (and an ordinary one) before
// every step of an engine with transfers in flight gives the clone's first-token time and
// restores the engine exactly.
func TestSpeculateRemotePrefill(t *testing.T) {
	cfg := pdConfig()
	cfg.NumGPUBlocks = 70
	cfg.Noise, cfg.Seed = 0.2, 5
	e, twin := newEngine(t, cfg), newEngine(t, cfg)
	pdWorkload(t, e, 120, 0)
	pdWorkload(t, twin, 120, 0)
	var got, want []Event
	inTransfer := 0
	for i := 0; e.Busy(); i++ {
		in := 30 + (i*53)%400
		r := Request{ID: 1e6 + uint64(i), InputTokens: in, OutputTokens: 3, Blocks: seqHashes(uint64(i%5)*1000, in/16), RemotePrefill: i%2 == 0}
		now := e.Clock()
		before := stateOf(e)
		if len(e.transfers) > 0 {
			inTransfer++
		}
		wantTTFT := firstTokenAt(t, e.Clone(), r, now)
		var gotTTFT time.Duration
		e.Speculate(func(s Engine) {
			gotTTFT = firstTokenAt(t, s, r, now)
			inner := s.(*Batch).Clone() // a clone taken inside must survive the rollback
			inner.Step(inner.NextStep())
		})
		if gotTTFT != wantTTFT {
			t.Fatalf("step %d: speculative first token at %v, clone's at %v", i, gotTTFT, wantTTFT)
		}
		if !reflect.DeepEqual(before, stateOf(e)) {
			t.Fatalf("step %d: Speculate did not restore the engine:\n%s", i,
				cmp.Diff(before, stateOf(e), cmp.Exporter(func(reflect.Type) bool { return true })))
		}
		got = append(got, e.Step(e.NextStep()).Events...)
		want = append(want, twin.Step(twin.NextStep()).Events...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("speculating engine diverged from its twin (-twin +speculating):\n%s", diff)
	}
	if inTransfer == 0 {
		t.Error("no speculation ran with a transfer in flight: the test is too easy")
	}
}

// TestAbortInTransfer: a request aborted while its KV is on the way frees its blocks.
func TestAbortInTransfer(t *testing.T) {
	e := newEngine(t, pdConfig())
	add(t, e, Request{ID: 1, InputTokens: 100, OutputTokens: 3, RemotePrefill: true}, 0)
	e.Step(0)
	if !e.Abort(1) || e.Busy() || e.Metrics().KVCacheUsage != 0 || e.NextStep() != -1 {
		t.Fatalf("after aborting the request in transfer: busy %v, %+v, next step %v", e.Busy(), e.Metrics(), e.NextStep())
	}
	checkKV(t, e)
}

// TestKVTransferValidate: the transfer cost must not be negative, in either family, and the slot
// family's transfer jitter is the slot family's only.
func TestKVTransferValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  func() Config
		edit func(*Config)
		want string
	}{
		{"batch latency", testConfig, func(c *Config) { c.KVTransfer.Latency = -time.Millisecond }, "kv_transfer.latency must be at least 0, got -1ms"},
		{"batch per token", testConfig, func(c *Config) { c.KVTransfer.PerToken = -time.Microsecond }, "kv_transfer.per_token must be at least 0, got -1µs"},
		{"batch with slot jitter", testConfig, func(c *Config) { c.Slot.KVCacheTransferTimeStdDev = time.Millisecond }, `slot settings apply only to family "slot"`},
		{"slot per token", slotTestConfig, func(c *Config) { c.KVTransfer.PerToken = -time.Microsecond }, "kv_transfer.per_token must be at least 0, got -1µs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg()
			tt.edit(&cfg)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v; want an error containing %q", err, tt.want)
			}
		})
	}
	for _, c := range []Config{pdConfig(), testConfig()} {
		if _, err := New(c); err != nil {
			t.Errorf("New(%+v): %v", c.KVTransfer, err)
		}
	}
}
