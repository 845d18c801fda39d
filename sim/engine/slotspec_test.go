package engine

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// slotState is everything about a slot engine that can influence what it does next.
type slotState struct {
	Rng                uint64
	Jitter, AbortFreed bool
	Clock, AdmitFloor  time.Duration
	Queries, Hits      int64
	Queue, Running     []slotReq
	Entries            []cacheBlock
	Index              map[uint64]int32
	Used, Head, Tail   int32
	Journaling         bool
}

func slotStateOf(e *Slot) slotState {
	return slotState{
		Rng: e.rng, Jitter: e.jitter, AbortFreed: e.abortFreed, Clock: e.clock, AdmitFloor: e.admitFloor,
		Queries: e.queries, Hits: e.hits, Queue: append([]slotReq(nil), e.queue...), Running: append([]slotReq(nil), e.running...),
		Entries: append([]cacheBlock(nil), e.cache.entries...), Index: func() map[uint64]int32 {
			m := map[uint64]int32{}
			for k, v := range e.cache.index {
				m[k] = v
			}
			return m
		}(),
		Used: e.cache.used, Head: e.cache.head, Tail: e.cache.tail, Journaling: e.cache.journaling,
	}
}

// firstTokenAt adds r at now and steps e until r's first token.
func firstTokenAt(t testing.TB, e Engine, r Request, now time.Duration) time.Duration {
	t.Helper()
	if err := e.Add(r, now); err != nil {
		t.Fatal(err)
	}
	for e.Busy() {
		for _, ev := range e.Step(e.NextStep()).Events {
			if ev.ID == r.ID && ev.Kind == FirstToken {
				return ev.Time
			}
		}
	}
	t.Fatalf("request %d: no first token", r.ID)
	return 0
}

// TestSlotSpeculateMatchesCloneAndRestores speculates an arrival before every step of a loaded,
// jittery engine with a small cache (evictions, queueing): each speculation gives the clone's
// first-token time, leaves the state unchanged, and the engine then runs exactly like a twin
// that never speculated.
func TestSlotSpeculateMatchesCloneAndRestores(t *testing.T) {
	cfg := jitteryConfig(3)
	cfg.NumGPUBlocks = 20
	e, twin := newSlot(t, cfg), newSlot(t, cfg)
	for _, a := range slotWorkload() {
		for _, x := range []*Slot{e, twin} {
			if err := x.Add(a.r, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got, want []Event
	for i := 0; e.Busy(); i++ {
		r := Request{ID: 1e6 + uint64(i), InputTokens: 30 + (i*53)%200, OutputTokens: 2, Blocks: []uint64{uint64(i%4) * 100}}
		now := e.Clock()
		before := slotStateOf(e)
		c := e.Clone()
		c.ExpectStepTimes()
		wantTTFT := firstTokenAt(t, c, r, now)
		var gotTTFT time.Duration
		e.Speculate(func(s Engine) {
			s.ExpectStepTimes()
			gotTTFT = firstTokenAt(t, s, r, now)
			inner := s.(*Slot).Clone() // a clone taken inside must survive the rollback
			inner.Step(inner.NextStep())
		})
		if gotTTFT != wantTTFT {
			t.Fatalf("step %d: speculative first token at %v, clone's at %v", i, gotTTFT, wantTTFT)
		}
		if after := slotStateOf(e); !reflect.DeepEqual(before, after) {
			t.Fatalf("step %d: Speculate did not restore the engine:\n%s", i,
				cmp.Diff(before, after, cmp.Exporter(func(reflect.Type) bool { return true })))
		}
		got = append(got, e.Step(e.NextStep()).Events...)
		want = append(want, twin.Step(twin.NextStep()).Events...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("speculating engine diverged from its twin (-twin +speculating):\n%s", diff)
	}
	if diff := cmp.Diff(twin.Metrics(), e.Metrics()); diff != "" {
		t.Fatalf("metrics differ (-twin +speculating):\n%s", diff)
	}
}

// TestSlotSpeculateKeepsCallersEvents checks that the events of the last Step stay valid.
func TestSlotSpeculateKeepsCallersEvents(t *testing.T) {
	e := newSlot(t, slotTestConfig())
	if err := e.Add(req(1, 100, 5), 0); err != nil {
		t.Fatal(err)
	}
	var res StepResult
	for len(res.Events) == 0 {
		res = e.Step(e.NextStep())
	}
	want := slices.Clone(res.Events)
	e.Speculate(func(s Engine) { firstTokenAt(t, s, req(2, 50, 2), s.Clock()) })
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Fatalf("Speculate overwrote the last step's events:\n%s", diff)
	}
}

// TestSlotAbort: aborting a running request frees its slot for the queue head, which starts no
// earlier than the now of the next Step; aborting a queued one just removes it.
func TestSlotAbort(t *testing.T) {
	cfg := slotTestConfig()
	cfg.MaxNumSeqs = 1
	e := newSlot(t, cfg)
	for i := range 3 {
		if err := e.Add(req(uint64(i+1), 100, 10), 0); err != nil {
			t.Fatal(err)
		}
	}
	e.Step(e.NextStep()) // 1 takes the slot at 0; its first token is due at 30 ms
	if !e.Abort(3) || !e.Abort(1) || e.Abort(1) {
		t.Fatal("Abort: want true for 3 (queued) and 1 (running), then false")
	}
	// The abort happened at some unknown time after 0; the driver steps at 12 ms: 2 takes the
	// slot then and gets its first token 30 ms later.
	if res := e.Step(12 * ms); res.Start != 12*ms || len(res.Events) != 0 {
		t.Fatalf("step after the abort: %+v, want an admission at 12ms", res)
	}
	if got := e.Step(e.NextStep()).Events; len(got) != 1 || got[0] != (Event{Kind: FirstToken, ID: 2, Time: 42 * ms, Tokens: 1}) {
		t.Fatalf("events %+v, want request 2's first token at 42ms", got)
	}
	if m := e.Metrics(); m.Waiting != 0 || m.Running != 1 {
		t.Errorf("waiting %d, running %d; want 0, 1", m.Waiting, m.Running)
	}
}

func TestSlotConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string // "" = valid
	}{
		{"preset-like", func(*Config) {}, ""},
		{"no slots", func(c *Config) { c.MaxNumSeqs = 0 }, "max_num_seqs (slots) must be at least 1, got 0"},
		{"budget", func(c *Config) { c.MaxNumBatchedTokens = 8 }, `max_num_batched_tokens must be 0 for family "slot"`},
		{"block size", func(c *Config) { c.BlockSize = 10 }, `block_size must be one of [8 16 32 64 128] for family "slot", got 10`},
		{"cache", func(c *Config) { c.NumGPUBlocks = 0 }, "num_gpu_blocks (kv-cache-size) must be in [1, 2147483647], got 0"},
		{"coefficients", func(c *Config) { c.Coefficients.Beta[0] = 1 }, `coefficients apply only to family "batch"`},
		{"speed", func(c *Config) { c.Speed = 0 }, "speed must be a finite factor > 0"},
		{"negative", func(c *Config) { c.Slot.PrefillOverhead = -ms }, "slot.prefill_overhead must be at least 0, got -1ms"},
		{"itl std-dev", func(c *Config) { c.Slot.InterTokenLatencyStdDev = 4 * ms }, "slot.inter_token_latency_std_dev must be at most 30 % of slot.inter_token_latency (10ms), got 4ms"},
		{"factor", func(c *Config) { c.Slot.TimeFactorUnderLoad = 0.5 }, "slot.time_factor_under_load must be a finite factor ≥ 1, got 0.5"},
		{"transfer latency", func(c *Config) { c.KVTransfer.Latency = -ms }, "kv_transfer.latency must be at least 0, got -1ms"},
		{"transfer per token", func(c *Config) { c.KVTransfer.PerToken = -1 }, "kv_transfer.per_token must be at least 0, got -1ns"},
		{"transfer time std-dev", func(c *Config) { c.Slot.KVCacheTransferTimeStdDev = -ms }, "slot.kv_cache_transfer_time_std_dev must be at least 0, got -1ms"},
		{"transfer latency std-dev", func(c *Config) { c.KVTransfer.Latency, c.Slot.KVCacheTransferLatencyStdDev = 10*ms, 4*ms },
			"slot.kv_cache_transfer_latency_std_dev must be at most 30 % of kv_transfer.latency (10ms), got 4ms"},
		{"transfer std-dev uncapped", func(c *Config) { c.KVTransfer.PerToken, c.Slot.KVCacheTransferTimeStdDev = ms, time.Second }, ""},
		{"batch with slot settings", func(c *Config) { *c = testConfig(); c.Slot.TimeFactorUnderLoad = 2 }, `slot settings apply only to family "slot"`},
		{"family", func(c *Config) { c.Family = "vllm" }, `family must be "batch" or "slot", got "vllm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := slotTestConfig()
			tt.mod(&c)
			_, err := New(c)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSlotPresets(t *testing.T) {
	tests := []struct {
		name string
		want SlotConfig
		kv   KVTransfer
	}{{
		// llm-d-inference-sim docs/latency-profiles.md, Profile 1, per-token calculator.
		name: "sim-8b-h100-32slots",
		want: SlotConfig{InterTokenLatency: 12 * ms, InterTokenLatencyStdDev: 2 * ms, PrefillOverhead: 30 * ms,
			PrefillTimePerToken: 250 * time.Microsecond, PrefillTimeStdDev: 5 * ms, TimeFactorUnderLoad: 2, Resolution: ms,
			KVCacheTransferTimeStdDev: 200 * time.Microsecond},
		// kv-cache-transfer-time-per-token: 3us, no fixed latency.
		kv: KVTransfer{PerToken: 3 * time.Microsecond},
	}, {
		// Profile 2, per-token calculator.
		name: "sim-70b-h100-tp8-32slots",
		want: SlotConfig{InterTokenLatency: 25 * ms, InterTokenLatencyStdDev: 4 * ms, PrefillOverhead: 80 * ms,
			PrefillTimePerToken: 500 * time.Microsecond, PrefillTimeStdDev: 15 * ms, TimeFactorUnderLoad: 3, Resolution: ms,
			KVCacheTransferTimeStdDev: 500 * time.Microsecond},
		kv: KVTransfer{PerToken: 8 * time.Microsecond},
	}}
	if got := len(slotPresets); got != len(tests) {
		t.Errorf("%d slot presets, %d tested", got, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Contains(Presets(), tt.name) {
				t.Errorf("Presets() lacks %q", tt.name)
			}
			c, err := Preset(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if c.Slot != tt.want {
				t.Errorf("slot settings %+v, want %+v", c.Slot, tt.want)
			}
			if c.KVTransfer != tt.kv {
				t.Errorf("KV transfer %+v, want %+v", c.KVTransfer, tt.kv)
			}
			// 32 slots (the outside evaluation's), llm-d-inference-sim's default cache and block
			// size, Llama 3.1's context.
			if c.Family != FamilySlot || c.MaxNumSeqs != 32 || c.NumGPUBlocks != 1024 || c.BlockSize != 16 || c.MaxModelLen != 131072 || c.Speed != 1 {
				t.Errorf("preset %+v", c)
			}
			e, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			// A lone 256-token prompt: Profile 1's sanity check, 30 + 256·0.25 = 94 ms; Profile
			// 2's, 80 + 256·0.5 = 208 ms.
			wantTTFT := map[string]time.Duration{"sim-8b-h100-32slots": 94 * ms, "sim-70b-h100-tp8-32slots": 208 * ms}[tt.name]
			e.ExpectStepTimes()
			if got := firstTokenAt(t, e, req(1, 256, 2), 0); got != wantTTFT {
				t.Errorf("TTFT of a lone 256-token prompt %v, want %v", got, wantTTFT)
			}
		})
	}
}
