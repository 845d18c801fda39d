package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms = time.Millisecond

// slotTestConfig is 4 slots with TTFT = (20 ms + 100 µs per uncached prompt token)·f(n) and
// ITL = 10 ms·f(n), where f(n) = 1 + (4 − 1)(n − 1)/(4 − 1) = n requests running, whole
// milliseconds, no jitter, a 64-block cache of 16-token blocks.
func slotTestConfig() Config {
	return Config{
		Family: FamilySlot, MaxNumSeqs: 4, BlockSize: 16, NumGPUBlocks: 64, Speed: 1,
		Slot: SlotConfig{
			InterTokenLatency: 10 * ms, PrefillOverhead: 20 * ms, PrefillTimePerToken: 100 * time.Microsecond,
			TimeFactorUnderLoad: 4, Resolution: ms,
		},
	}
}

func newSlot(t testing.TB, cfg Config) *Slot {
	t.Helper()
	e, err := NewSlot(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// slotArrival is a request added at a time.
type slotArrival struct {
	at time.Duration
	r  Request
}

// runSlot adds the arrivals (in order), stepping the engine through the instants before each
// arrival first (so that arrivals at one time enter together), then drains it; it returns every
// event.
func runSlot(t testing.TB, e Engine, arrivals []slotArrival) []Event {
	t.Helper()
	var evs []Event
	step := func() { evs = append(evs, e.Step(e.NextStep()).Events...) }
	for _, a := range arrivals {
		for n := e.NextStep(); n >= 0 && n < a.at; n = e.NextStep() {
			step()
		}
		if err := e.Add(a.r, a.at); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; e.Busy(); i++ {
		if i > 1e6 {
			t.Fatal("engine did not drain")
		}
		step()
	}
	return evs
}

func ev(k EventKind, id uint64, at time.Duration, tokens int) Event {
	return Event{Kind: k, ID: id, Time: at, Tokens: tokens}
}

func req(id uint64, in, out int) Request { return Request{ID: id, InputTokens: in, OutputTokens: out} }

func TestSlotLatencyFormulas(t *testing.T) {
	tests := []struct {
		name     string
		cfg      func(*Config)
		arrivals []slotArrival
		want     []Event
	}{{
		// Alone, f(1) = 1: TTFT = 20 + 100·0.1 = 30 ms; then a token every 10 ms.
		name:     "alone",
		arrivals: []slotArrival{{0, req(1, 100, 3)}},
		want:     []Event{ev(FirstToken, 1, 30*ms, 1), ev(Token, 1, 40*ms, 2), ev(Token, 1, 50*ms, 3), ev(Finish, 1, 50*ms, 3)},
	}, {
		// Two slots taken at 0: f(2) = 2, TTFT = 30·2 = 60 ms; ITL = 10·2 = 20 ms.
		name:     "two in flight",
		arrivals: []slotArrival{{0, req(1, 100, 2)}, {0, req(2, 100, 2)}},
		want: []Event{ev(FirstToken, 1, 60*ms, 1), ev(FirstToken, 2, 60*ms, 1),
			ev(Token, 1, 80*ms, 2), ev(Finish, 1, 80*ms, 2), ev(Token, 2, 80*ms, 2), ev(Finish, 2, 80*ms, 2)},
	}, {
		// The load is read when each duration starts: 1's first ITL starts at 30 ms alone (10 ms,
		// token at 40); 2 arrives at 35 with 1 running, n = 2: TTFT 60 → 95 ms; 1's second ITL
		// starts at 40 with n = 2: 20 ms → 60 ms, its last token.
		name:     "load read per duration",
		arrivals: []slotArrival{{0, req(1, 100, 3)}, {35 * ms, req(2, 100, 1)}},
		want: []Event{ev(FirstToken, 1, 30*ms, 1), ev(Token, 1, 40*ms, 2), ev(Token, 1, 60*ms, 3), ev(Finish, 1, 60*ms, 3),
			ev(FirstToken, 2, 95*ms, 1), ev(Finish, 2, 95*ms, 1)},
	}, {
		// Every slot busy: f(4) = 4, the configured factor: TTFT = 30·4 = 120 ms.
		name:     "full",
		arrivals: []slotArrival{{0, req(1, 100, 1)}, {0, req(2, 100, 1)}, {0, req(3, 100, 1)}, {0, req(4, 100, 1)}},
		want: []Event{ev(FirstToken, 1, 120*ms, 1), ev(Finish, 1, 120*ms, 1), ev(FirstToken, 2, 120*ms, 1), ev(Finish, 2, 120*ms, 1),
			ev(FirstToken, 3, 120*ms, 1), ev(Finish, 3, 120*ms, 1), ev(FirstToken, 4, 120*ms, 1), ev(Finish, 4, 120*ms, 1)},
	}, {
		// Factor 2: f(2) = 1 + 1/3. Each part is scaled and truncated to the nanosecond, as
		// llm-d-inference-sim does: 20 ms·f = 26,666,666 ns, 100 µs·f = 133,333 ns × 110 =
		// 14,666,630 ns, TTFT 41,333,296 ns → 41 ms; ITL 13,333,333 ns → 13 ms.
		name:     "whole milliseconds",
		cfg:      func(c *Config) { c.Slot.TimeFactorUnderLoad = 2 },
		arrivals: []slotArrival{{0, req(1, 110, 2)}, {0, req(2, 110, 2)}},
		want: []Event{ev(FirstToken, 1, 41*ms, 1), ev(FirstToken, 2, 41*ms, 1),
			ev(Token, 1, 54*ms, 2), ev(Finish, 1, 54*ms, 2), ev(Token, 2, 54*ms, 2), ev(Finish, 2, 54*ms, 2)},
	}, {
		// Resolution 0 keeps nanoseconds: 41,333,296 ns, then + 13,333,333 = 54,666,629 ns.
		name:     "nanoseconds",
		cfg:      func(c *Config) { c.Slot.TimeFactorUnderLoad, c.Slot.Resolution = 2, 0 },
		arrivals: []slotArrival{{0, req(1, 110, 2)}, {0, req(2, 110, 2)}},
		want: []Event{ev(FirstToken, 1, 41333296, 1), ev(FirstToken, 2, 41333296, 1),
			ev(Token, 1, 54666629, 2), ev(Finish, 1, 54666629, 2), ev(Token, 2, 54666629, 2), ev(Finish, 2, 54666629, 2)},
	}, {
		// One slot: f is 1 whatever the factor. TTFT 30, ITL 10.
		name:     "one slot",
		cfg:      func(c *Config) { c.MaxNumSeqs = 1 },
		arrivals: []slotArrival{{0, req(1, 100, 2)}},
		want:     []Event{ev(FirstToken, 1, 30*ms, 1), ev(Token, 1, 40*ms, 2), ev(Finish, 1, 40*ms, 2)},
	}, {
		// Speed 2 doubles every duration: TTFT 60, ITL 20.
		name:     "speed",
		cfg:      func(c *Config) { c.Speed = 2 },
		arrivals: []slotArrival{{0, req(1, 100, 2)}},
		want:     []Event{ev(FirstToken, 1, 60*ms, 1), ev(Token, 1, 80*ms, 2), ev(Finish, 1, 80*ms, 2)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := slotTestConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			got := runSlot(t, newSlot(t, cfg), tt.arrivals)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSlotFIFOQueue: with every slot taken, requests wait in arrival order and their TTFT
// includes the wait.
func TestSlotFIFOQueue(t *testing.T) {
	tests := []struct {
		name     string
		slots    int
		arrivals []slotArrival
		want     []Event
	}{{
		// One slot, f = 1. 1: TTFT 30, tokens at 30 and 40. 2 (arrived at 5) takes the slot at
		// 40: tokens at 70 and 80 (TTFT 65 ms from its arrival). 3 (arrived at 6, 200 tokens:
		// 20 + 20 = 40 ms) takes it at 80: token at 120 (TTFT 114 ms).
		name:     "one slot",
		slots:    1,
		arrivals: []slotArrival{{0, req(1, 100, 2)}, {5 * ms, req(2, 100, 2)}, {6 * ms, req(3, 200, 1)}},
		want: []Event{ev(FirstToken, 1, 30*ms, 1), ev(Token, 1, 40*ms, 2), ev(Finish, 1, 40*ms, 2),
			ev(FirstToken, 2, 70*ms, 1), ev(Token, 2, 80*ms, 2), ev(Finish, 2, 80*ms, 2),
			ev(FirstToken, 3, 120*ms, 1), ev(Finish, 3, 120*ms, 1)},
	}, {
		// Two slots, factor 4: f(2) = 1 + 3·1/1 = 4. 1 and 2 start at 0 with n = 2: TTFT 120
		// ms, then finish. 3 (arrived at 1 ms) takes a freed slot at 120 ms, alone then: TTFT
		// 30 → 150 ms (149 ms after its arrival).
		name:     "two slots",
		slots:    2,
		arrivals: []slotArrival{{0, req(1, 100, 1)}, {0, req(2, 100, 1)}, {ms, req(3, 100, 1)}},
		want: []Event{ev(FirstToken, 1, 120*ms, 1), ev(Finish, 1, 120*ms, 1), ev(FirstToken, 2, 120*ms, 1), ev(Finish, 2, 120*ms, 1),
			ev(FirstToken, 3, 150*ms, 1), ev(Finish, 3, 150*ms, 1)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := slotTestConfig()
			cfg.MaxNumSeqs = tt.slots
			got := runSlot(t, newSlot(t, cfg), tt.arrivals)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSlotQueueMetrics: waiting is the queue, running the occupied slots.
func TestSlotQueueMetrics(t *testing.T) {
	cfg := slotTestConfig()
	cfg.MaxNumSeqs = 2
	e := newSlot(t, cfg)
	for i := range 5 {
		if err := e.Add(req(uint64(i), 100, 2), 0); err != nil {
			t.Fatal(err)
		}
	}
	if m := e.Metrics(); m.Waiting != 5 || m.Running != 0 {
		t.Fatalf("after adds: waiting %d, running %d; want 5, 0", m.Waiting, m.Running)
	}
	e.Step(e.NextStep()) // t = 0: two take the slots
	if m := e.Metrics(); m.Waiting != 3 || m.Running != 2 {
		t.Fatalf("after the first step: waiting %d, running %d; want 3, 2", m.Waiting, m.Running)
	}
}

func slotBlocks(hashes ...uint64) []uint64 { return hashes }

// TestSlotPrefixCache checks hits against prefill, the LRU order of eviction and that blocks in
// use are never evicted. Each probe runs alone (f = 1) with one output token, so its first
// token comes (20 + 0.1·uncached) ms after it starts.
func TestSlotPrefixCache(t *testing.T) {
	type probe struct {
		r          Request
		wantCached int
		wantTTFT   time.Duration
	}
	tests := []struct {
		name   string
		blocks int
		probes []probe
	}{{
		// 1 fills 4 blocks (64 + 6 tokens: TTFT 20 + 7 = 27 ms). 2 shares its first 3 blocks:
		// 48 tokens cached, 22 computed: 20 + 2.2 = 22.2 → 22 ms. 3 is exactly 1's 4 blocks: all
		// 64 tokens cached (no recomputed last block, unlike vLLM), TTFT the overhead, 20 ms.
		name:   "hits reduce prefill",
		blocks: 64,
		probes: []probe{
			{Request{ID: 1, InputTokens: 70, OutputTokens: 1, Blocks: slotBlocks(1, 2, 3, 4)}, 0, 27 * ms},
			{Request{ID: 2, InputTokens: 70, OutputTokens: 1, Blocks: slotBlocks(1, 2, 3, 9)}, 48, 22 * ms},
			{Request{ID: 3, InputTokens: 64, OutputTokens: 1, Blocks: slotBlocks(1, 2, 3, 4)}, 64, 20 * ms},
		},
	}, {
		// 8 blocks. 1 stores a1..a4 and releases them last first: LRU a4, a3, a2, a1. 2 adds
		// b1..b4 behind them: the cache is full. 3 needs 2 new blocks: it evicts a4 and a3, the
		// oldest, and its own go to the tail at its end (LRU a2 a1 b4 b3 b2 b1 c2 c1). 4 = a1..a4
		// finds a1 a2 (32 tokens), taking them off the list, and stores a3 a4 over the oldest
		// unused blocks, b4 and b3. 5 = b1..b4 finds b1 b2 only: 32 tokens.
		name:   "lru eviction order",
		blocks: 8,
		probes: []probe{
			{Request{ID: 1, InputTokens: 64, OutputTokens: 1, Blocks: slotBlocks(11, 12, 13, 14)}, 0, 26 * ms},
			{Request{ID: 2, InputTokens: 64, OutputTokens: 1, Blocks: slotBlocks(21, 22, 23, 24)}, 0, 26 * ms},
			{Request{ID: 3, InputTokens: 32, OutputTokens: 1, Blocks: slotBlocks(31, 32)}, 0, 23 * ms},
			{Request{ID: 4, InputTokens: 64, OutputTokens: 1, Blocks: slotBlocks(11, 12, 13, 14)}, 32, 23 * ms},
			{Request{ID: 5, InputTokens: 64, OutputTokens: 1, Blocks: slotBlocks(21, 22, 23, 24)}, 32, 23 * ms},
		},
	}}
	// TTFTs: 64 uncached tokens 20 + 6.4 = 26.4 → 26 ms; 32 uncached 23.2 → 23 ms.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := slotTestConfig()
			cfg.NumGPUBlocks = tt.blocks
			e := newSlot(t, cfg)
			var queries, hits int64
			for i, p := range tt.probes {
				start := time.Duration(i) * time.Second
				evs := runSlot(t, e, []slotArrival{{start, p.r}})
				if evs[0].Kind != FirstToken || evs[0].CachedTokens != p.wantCached || evs[0].Time-start != p.wantTTFT {
					t.Errorf("request %d: %v, cached %d, TTFT %v; want first token, cached %d, TTFT %v",
						p.r.ID, evs[0].Kind, evs[0].CachedTokens, evs[0].Time-start, p.wantCached, p.wantTTFT)
				}
				queries, hits = queries+int64(p.r.InputTokens), hits+int64(p.wantCached)
			}
			if m := e.Metrics(); m.PrefixCacheQueries != queries || m.PrefixCacheHits != hits || m.KVCacheUsage != 0 {
				t.Errorf("metrics %+v; want %d queries, %d hits, no usage", m, queries, hits)
			}
		})
	}
}

// TestSlotCacheKeepsBlocksInUse: a long request holds 6 of 8 blocks while another with 4 new
// blocks runs; the second stores only the 2 that fit, evicting nothing in use.
func TestSlotCacheKeepsBlocksInUse(t *testing.T) {
	cfg := slotTestConfig()
	cfg.NumGPUBlocks = 8
	e := newSlot(t, cfg)
	long := Request{ID: 1, InputTokens: 96, OutputTokens: 50, Blocks: slotBlocks(1, 2, 3, 4, 5, 6)}
	other := Request{ID: 2, InputTokens: 64, OutputTokens: 1, Blocks: slotBlocks(7, 8, 9, 10)}
	if err := e.Add(long, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(other, 0); err != nil {
		t.Fatal(err)
	}
	e.Step(e.NextStep())
	if m := e.Metrics(); m.KVCacheUsage != 1 || m.Running != 2 {
		t.Fatalf("both running: usage %v, running %d; want 1 (8 of 8 blocks in use), 2", m.KVCacheUsage, m.Running)
	}
	for e.Busy() {
		e.Step(e.NextStep())
	}
	// Probes, one at a time: the long prompt's 6 blocks all survived (96 tokens cached); of the
	// other, its first 2 blocks were stored (32 tokens).
	for _, p := range []struct {
		r    Request
		want int
	}{{Request{ID: 3, InputTokens: 96, OutputTokens: 1, Blocks: long.Blocks}, 96}, {Request{ID: 4, InputTokens: 64, OutputTokens: 1, Blocks: other.Blocks}, 32}} {
		evs := runSlot(t, e, []slotArrival{{e.Clock() + time.Second, p.r}})
		if evs[0].CachedTokens != p.want {
			t.Errorf("request %d: %d cached tokens, want %d", p.r.ID, evs[0].CachedTokens, p.want)
		}
	}
}

// slotWorkload is 60 requests, 3 every 20 ms, sharing prefixes in 4 groups.
func slotWorkload() []slotArrival {
	var as []slotArrival
	for i := range 60 {
		in := 40 + (i*37)%300
		group := uint64(i%4) * 100
		var hashes []uint64
		for j := range in / 16 {
			hashes = append(hashes, group+uint64(j))
		}
		as = append(as, slotArrival{time.Duration(i/3) * 20 * ms, Request{ID: uint64(i), InputTokens: in, OutputTokens: 1 + (i*13)%40, Blocks: hashes}})
	}
	return as
}

func jitteryConfig(seed uint64) Config {
	cfg := slotTestConfig()
	cfg.NumGPUBlocks = 40
	cfg.Slot.InterTokenLatencyStdDev, cfg.Slot.PrefillTimeStdDev = 3*ms, 5*ms
	cfg.Seed = seed
	return cfg
}

func TestSlotDeterministic(t *testing.T) {
	a := runSlot(t, newSlot(t, jitteryConfig(7)), slotWorkload())
	b := runSlot(t, newSlot(t, jitteryConfig(7)), slotWorkload())
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different events (-first +second):\n%s", diff)
	}
	if c := runSlot(t, newSlot(t, jitteryConfig(8)), slotWorkload()); cmp.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same events: no jitter")
	}
	if d := runSlot(t, newSlot(t, slotTestConfig()), slotWorkload()); slices.ContainsFunc(d, func(ev Event) bool { return ev.Time%ms != 0 }) {
		t.Error("an event time is not a whole millisecond")
	}
}

// TestSlotJitterClamp draws many durations with a std-dev far above the mean: every sample is
// clamped to [0.3, 1.7] × mean and whole milliseconds; without jitter, the mean itself.
func TestSlotJitterClamp(t *testing.T) {
	cfg := slotTestConfig()
	cfg.Slot.PrefillTimeStdDev = 100 * ms // no cap on the prefill std-dev, as in llm-d-inference-sim
	e := newSlot(t, cfg)
	seen := map[time.Duration]bool{}
	for range 2000 {
		d := e.prefillTime(0, 1) // mean 20 ms: clamped to [6, 34] ms
		if d < 6*ms || d > 34*ms || d%ms != 0 {
			t.Fatalf("sample %v outside [6ms, 34ms] or not whole ms", d)
		}
		seen[d] = true
	}
	if !seen[6*ms] || !seen[34*ms] || len(seen) < 10 {
		t.Errorf("samples %v: want both clamps and values between", seen)
	}
	e.ExpectStepTimes()
	if d := e.prefillTime(0, 1); d != 20*ms {
		t.Errorf("without jitter: %v, want the mean 20ms", d)
	}
	// The ITL std-dev (3 ms = 30 % of 10 ms, the cap) never takes a sample past ±70 %.
	cfg.Slot.InterTokenLatencyStdDev = 3 * ms
	e = newSlot(t, cfg)
	for range 2000 {
		if d := e.interTokenTime(1); d < 3*ms || d > 17*ms {
			t.Fatalf("ITL sample %v outside [3ms, 17ms]", d)
		}
	}
}
