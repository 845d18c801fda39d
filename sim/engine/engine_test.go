package engine

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testConfig is a small server with step time = 1000 + 10·prefill + 1·decode µs and no
// overheads, so expected times can be worked out by hand.
func testConfig() Config {
	return Config{
		MaxNumSeqs:          8,
		MaxNumBatchedTokens: 64,
		BlockSize:           16,
		NumGPUBlocks:        101,
		Coefficients:        Coefficients{Beta: [3]float64{1000, 10, 1}},
		Speed:               1,
	}
}

func us(n float64) time.Duration { return micros(n) }

func newEngine(t testing.TB, cfg Config) *Batch {
	t.Helper()
	e, err := NewBatch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func add(t testing.TB, e *Batch, r Request, at time.Duration) {
	t.Helper()
	if err := e.Add(r, at); err != nil {
		t.Fatal(err)
	}
}

// drain steps e until it is idle and returns every step (with a private copy of its events).
func drain(t testing.TB, e *Batch) []StepResult {
	t.Helper()
	var steps []StepResult
	for e.Busy() {
		if len(steps) > 100000 {
			t.Fatal("engine did not drain in 100000 steps")
		}
		s := e.Step(e.NextStep())
		s.Events = slices.Clone(s.Events)
		steps = append(steps, s)
	}
	return steps
}

func events(steps []StepResult) []Event {
	var evs []Event
	for _, s := range steps {
		evs = append(evs, s.Events...)
	}
	return evs
}

// find returns the first event of kind for id, failing the test when there is none.
func find(t *testing.T, evs []Event, kind EventKind, id uint64) Event {
	t.Helper()
	for _, ev := range evs {
		if ev.Kind == kind && ev.ID == id {
			return ev
		}
	}
	t.Fatalf("no %v event for request %d in %v", kind, id, evs)
	return Event{}
}

func seqHashes(from uint64, n int) []uint64 {
	h := make([]uint64, n)
	for i := range h {
		h[i] = from + uint64(i)
	}
	return h
}

func TestStepTime(t *testing.T) {
	tp2, err := Preset("llama-3.1-8b-h100-tp2")
	if err != nil {
		t.Fatal(err)
	}
	tp2.Coefficients.Alpha = [3]float64{} // step times only
	type arrival struct {
		r  Request
		at time.Duration
	}
	tests := []struct {
		name     string
		cfg      Config
		arrivals []arrival
		step     int // 0-based index of the step checked
		dur      time.Duration
		prefill  int
		decode   int
	}{{
		name:     "one prompt",
		cfg:      testConfig(),
		arrivals: []arrival{{Request{ID: 1, InputTokens: 40, OutputTokens: 2}, 0}},
		dur:      us(1400), // 1000 + 10·40
		prefill:  40,
	}, {
		name:     "prompt capped by the token budget",
		cfg:      testConfig(),
		arrivals: []arrival{{Request{ID: 1, InputTokens: 100, OutputTokens: 2}, 0}},
		dur:      us(1640), // 1000 + 10·64
		prefill:  64,
	}, {
		name:     "one decode",
		cfg:      testConfig(),
		arrivals: []arrival{{Request{ID: 1, InputTokens: 40, OutputTokens: 2}, 0}},
		step:     1,
		dur:      us(1001), // 1000 + 1·1
		decode:   1,
	}, {
		name: "decodes share the budget with a new prompt's chunk",
		cfg:  testConfig(),
		arrivals: []arrival{
			{Request{ID: 1, InputTokens: 16, OutputTokens: 5}, 0},
			{Request{ID: 2, InputTokens: 16, OutputTokens: 5}, 0},
			{Request{ID: 3, InputTokens: 100, OutputTokens: 5}, us(1)},
		},
		// Step 0 (at 0) prefills 1 and 2; 3 arrives during it. Step 1: 2 decodes and
		// min(100, 64−2) = 62 prompt tokens of 3: 1000 + 10·62 + 2 = 1622 µs.
		step:    1,
		dur:     us(1622),
		prefill: 62,
		decode:  2,
	}, {
		name:     "llama-3.1-8b-h100-tp2 prefill",
		cfg:      tp2,
		arrivals: []arrival{{Request{ID: 1, InputTokens: 1000, OutputTokens: 2}, 0}},
		// 6910.420479880494 + 17.67057489844186·1000 = 24580.995378… µs → 24,580,995 ns.
		dur:     24580995,
		prefill: 1000,
	}, {
		name:     "llama-3.1-8b-h100-tp2 decode",
		cfg:      tp2,
		arrivals: []arrival{{Request{ID: 1, InputTokens: 1000, OutputTokens: 2}, 0}},
		step:     1,
		// 6910.420479880494 + 2.8377471109943855·1 = 6913.258227… µs → 6,913,258 ns.
		dur:    6913258,
		decode: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, tt.cfg)
			for _, a := range tt.arrivals {
				add(t, e, a.r, a.at)
			}
			steps := drain(t, e)
			s := steps[tt.step]
			if got := s.End - s.Start; got != tt.dur || s.PrefillTokens != tt.prefill || s.DecodeTokens != tt.decode {
				t.Errorf("step %d: duration %v, %d prefill, %d decode tokens; want %v, %d, %d",
					tt.step, got, s.PrefillTokens, s.DecodeTokens, tt.dur, tt.prefill, tt.decode)
			}
		})
	}
}

func TestChunkedPrefill(t *testing.T) {
	e := newEngine(t, testConfig())
	add(t, e, Request{ID: 1, InputTokens: 150, OutputTokens: 2}, 0)
	steps := drain(t, e)
	// Budget 64: chunks of 64, 64 and 22 tokens, then one decode.
	var chunks []int
	for _, s := range steps {
		chunks = append(chunks, s.PrefillTokens+s.DecodeTokens)
	}
	if want := []int{64, 64, 22, 1}; !slices.Equal(chunks, want) {
		t.Fatalf("tokens per step %v, want %v", chunks, want)
	}
	want := []Event{
		// 1640 + 1640 + 1220 µs (1000 + 10·22) = 4500 µs.
		{Kind: FirstToken, ID: 1, Time: us(4500), Tokens: 1},
		// + 1001 µs of decode.
		{Kind: Token, ID: 1, Time: us(5501), Tokens: 2},
		{Kind: Finish, ID: 1, Time: us(5501), Tokens: 2},
	}
	if diff := cmp.Diff(want, events(steps)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestMaxNumSeqs(t *testing.T) {
	cfg := testConfig()
	cfg.MaxNumSeqs = 2
	e := newEngine(t, cfg)
	for id := uint64(1); id <= 3; id++ {
		add(t, e, Request{ID: id, InputTokens: 10, OutputTokens: 3}, 0)
	}
	e.Step(0)
	if m := e.Metrics(); m.Running != 2 || m.Waiting != 1 {
		t.Fatalf("after one step: %d running, %d waiting; want 2, 1", m.Running, m.Waiting)
	}
	evs := events(drain(t, e))
	// Requests 1 and 2 prefill (1000 + 10·20 = 1200 µs) and decode twice (1002 µs each), finishing
	// at 3204 µs; only then does request 3 get a seat: 1000 + 10·10 = 1100 µs → 4304 µs.
	if got := find(t, evs, FirstToken, 3).Time; got != us(4304) {
		t.Errorf("request 3's first token at %v, want 4.304ms", got)
	}
}

func TestPrefixCache(t *testing.T) {
	type arrival struct {
		r     Request
		after bool // arrive after the earlier requests have finished
	}
	tests := []struct {
		name     string
		arrivals []arrival
		id       uint64 // request checked
		cached   int
		ttft     time.Duration // of the checked request, from its arrival
		queries  int64
		hits     int64
	}{{
		name: "second request reuses the first one's blocks",
		arrivals: []arrival{
			{Request{ID: 1, InputTokens: 64, OutputTokens: 1, Blocks: seqHashes(1, 4)}, false},
			{Request{ID: 2, InputTokens: 80, OutputTokens: 1, Blocks: seqHashes(1, 5)}, true},
		},
		// 4 blocks hit (64 tokens), 16 computed: 1000 + 10·16 = 1160 µs.
		id: 2, cached: 64, ttft: us(1160), queries: 64 + 80, hits: 64,
	}, {
		name: "a fully cached prompt still computes its last block",
		arrivals: []arrival{
			{Request{ID: 1, InputTokens: 64, OutputTokens: 1, Blocks: seqHashes(1, 4)}, false},
			{Request{ID: 2, InputTokens: 64, OutputTokens: 1, Blocks: seqHashes(1, 4)}, true},
		},
		// At most ⌊(64−1)/16⌋ = 3 blocks may hit; the last 16 tokens are computed: 1160 µs.
		id: 2, cached: 48, ttft: us(1160), queries: 128, hits: 48,
	}, {
		name: "prefixes diverge after two blocks",
		arrivals: []arrival{
			{Request{ID: 1, InputTokens: 64, OutputTokens: 1, Blocks: seqHashes(1, 4)}, false},
			{Request{ID: 2, InputTokens: 64, OutputTokens: 1, Blocks: []uint64{1, 2, 90, 91}}, true},
		},
		// 32 hit, 32 computed: 1000 + 10·32 = 1320 µs.
		id: 2, cached: 32, ttft: us(1320), queries: 128, hits: 32,
	}, {
		name: "blocks are cached when scheduled, so a request admitted in the same step hits",
		arrivals: []arrival{
			{Request{ID: 1, InputTokens: 32, OutputTokens: 1, Blocks: seqHashes(1, 2)}, false},
			{Request{ID: 2, InputTokens: 32, OutputTokens: 1, Blocks: seqHashes(1, 2)}, false},
		},
		// One step: 32 tokens of request 1, 16 of request 2 (1 block hit): 1000 + 10·48 = 1480 µs.
		id: 2, cached: 16, ttft: us(1480), queries: 64, hits: 16,
	}, {
		name: "a follow-up turn hits the previous answer's output blocks",
		arrivals: []arrival{
			// 20 prompt tokens + 30 output: blocks 1 and 2 (tokens 16–47) are completed by the
			// output, and only 49 tokens are ever computed, so both get cached.
			{Request{ID: 1, InputTokens: 20, OutputTokens: 30, Blocks: []uint64{1}, OutputBlocks: []uint64{7, 8}}, false},
			{Request{ID: 2, InputTokens: 60, OutputTokens: 1, Blocks: []uint64{1, 7, 8}}, true},
		},
		// 48 hit, 12 computed: 1000 + 10·12 = 1120 µs.
		id: 2, cached: 48, ttft: us(1120), queries: 20 + 60, hits: 48,
	}, {
		name: "without output hashes an answer is private to its request",
		arrivals: []arrival{
			{Request{ID: 1, InputTokens: 20, OutputTokens: 30, Blocks: []uint64{1}}, false},
			{Request{ID: 2, InputTokens: 60, OutputTokens: 1, Blocks: []uint64{1, 7, 8}}, true},
		},
		id: 2, cached: 16, ttft: us(1440), queries: 80, hits: 16, // 1000 + 10·44
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, testConfig())
			var evs []Event
			arrived := map[uint64]time.Duration{}
			for _, a := range tt.arrivals {
				at := time.Duration(0)
				if a.after {
					evs = append(evs, events(drain(t, e))...)
					at = e.Clock()
				}
				arrived[a.r.ID] = at
				add(t, e, a.r, at)
			}
			evs = append(evs, events(drain(t, e))...)
			ft := find(t, evs, FirstToken, tt.id)
			if ft.CachedTokens != tt.cached || ft.Time-arrived[tt.id] != tt.ttft {
				t.Errorf("request %d: %d cached tokens, TTFT %v; want %d, %v", tt.id, ft.CachedTokens, ft.Time-arrived[tt.id], tt.cached, tt.ttft)
			}
			if m := e.Metrics(); m.PrefixCacheQueries != tt.queries || m.PrefixCacheHits != tt.hits {
				t.Errorf("prefix cache queries %d, hits %d; want %d, %d", m.PrefixCacheQueries, m.PrefixCacheHits, tt.queries, tt.hits)
			}
		})
	}
}

func TestLRUEviction(t *testing.T) {
	cfg := testConfig()
	cfg.NumGPUBlocks = 9 // the null block + 8 usable blocks, numbered 1–8
	e := newEngine(t, cfg)
	run := func(r Request) Event {
		t.Helper()
		add(t, e, r, e.Clock())
		return find(t, events(drain(t, e)), FirstToken, r.ID)
	}
	a1, a2, b1, b2, x := uint64(11), uint64(12), uint64(21), uint64(22), uint64(31)
	// A takes blocks 1, 2 and frees them last block first: free queue 3 4 5 6 7 8 2 1.
	run(Request{ID: 1, InputTokens: 32, OutputTokens: 1, Blocks: []uint64{a1, a2}})
	// B takes 3, 4: free queue 5 6 7 8 2 1 4 3.
	run(Request{ID: 2, InputTokens: 32, OutputTokens: 1, Blocks: []uint64{b1, b2}})
	// A's prefix is hit again: blocks 1, 2 are touched (leave the queue) and 5 is new; freed in
	// reverse, the queue is 6 7 8 4 3 5 2 1 — B's blocks are now older than A's.
	if ev := run(Request{ID: 3, InputTokens: 48, OutputTokens: 1, Blocks: []uint64{a1, a2, x}}); ev.CachedTokens != 32 {
		t.Fatalf("A's prefix: %d cached tokens, want 32", ev.CachedTokens)
	}
	// Five fresh blocks come from the head: 6 7 8 and then B's 4 and 3 are evicted.
	run(Request{ID: 4, InputTokens: 80, OutputTokens: 1})
	// A's blocks survived, B's did not (33 tokens so that both blocks may hit).
	if ev := run(Request{ID: 5, InputTokens: 33, OutputTokens: 1, Blocks: []uint64{a1, a2}}); ev.CachedTokens != 32 {
		t.Errorf("A's prefix after eviction: %d cached tokens, want 32", ev.CachedTokens)
	}
	if ev := run(Request{ID: 6, InputTokens: 33, OutputTokens: 1, Blocks: []uint64{b1, b2}}); ev.CachedTokens != 0 {
		t.Errorf("B's prefix after eviction: %d cached tokens, want 0", ev.CachedTokens)
	}
}

func TestPreemption(t *testing.T) {
	cfg := testConfig()
	cfg.BlockSize = 4
	cfg.NumGPUBlocks = 5 // 4 usable blocks of 4 tokens
	e := newEngine(t, cfg)
	add(t, e, Request{ID: 1, InputTokens: 4, OutputTokens: 10}, 0)
	add(t, e, Request{ID: 2, InputTokens: 4, OutputTokens: 10}, 0)
	evs := events(drain(t, e))
	// Step 1 prefills both (1000 + 10·8 = 1080 µs); steps 2–5 decode both (1002 µs each) and
	// take the last two blocks. In step 6 (at 1080 + 4·1002 = 5088 µs) request 1 needs a third
	// block for its 9th token: request 2, the last admitted, is preempted after 5 tokens.
	want := []Event{{Kind: Preempted, ID: 2, Time: us(5088), Tokens: 5}}
	// Request 1 decodes alone for steps 6–10 (1001 µs each) and finishes at 10093 µs. Request 2
	// cannot come back before: its first block is still cached, but it needs 3 blocks and only
	// 1 is free; request 1 evicts that block in step 10.
	want = append(want,
		Event{Kind: Token, ID: 1, Time: us(10093), Tokens: 10},
		Event{Kind: Finish, ID: 1, Time: us(10093), Tokens: 10})
	// Step 11 recomputes request 2's 4 prompt + 5 output tokens (1000 + 10·9 = 1090 µs) and
	// samples its 6th token; 4 more decodes (1001 µs each) finish it at 15187 µs.
	want = append(want,
		Event{Kind: Token, ID: 2, Time: us(11183), Tokens: 6},
		Event{Kind: Token, ID: 2, Time: us(15187), Tokens: 10},
		Event{Kind: Finish, ID: 2, Time: us(15187), Tokens: 10})
	var got []Event
	for _, ev := range evs {
		if ev.Kind == Preempted || ev.Kind == Finish || (ev.Kind == Token && (ev.Tokens == 10 || ev.ID == 2 && ev.Tokens == 6)) {
			got = append(got, ev)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// Resumed requests do not count as prefix cache queries: 4 + 4 prompt tokens.
	if m := e.Metrics(); m.Preemptions != 1 || m.PrefixCacheQueries != 8 || m.Running+m.Waiting != 0 {
		t.Errorf("metrics %+v; want 1 preemption, 8 queries, nothing left", m)
	}
}

func TestOverheads(t *testing.T) {
	cfg := testConfig()
	cfg.Coefficients.Alpha = [3]float64{100, 2, 50}
	e := newEngine(t, cfg)
	add(t, e, Request{ID: 1, InputTokens: 50, OutputTokens: 3}, 0)
	// Schedulable after α0 + α1·50 = 100 + 100 = 200 µs.
	if got := e.NextStep(); got != us(200) {
		t.Fatalf("NextStep %v, want 200µs", got)
	}
	steps := drain(t, e)
	want := []Event{
		// Prefill 1000 + 10·50 = 1500 µs ends at 1700; the client sees the token α2 = 50 µs later.
		{Kind: FirstToken, ID: 1, Time: us(1750), Tokens: 1},
		// Decodes end at 2701 and 3702 µs; the output overhead accumulates: + 2·50, + 3·50.
		{Kind: Token, ID: 1, Time: us(2801), Tokens: 2},
		{Kind: Token, ID: 1, Time: us(3852), Tokens: 3},
		{Kind: Finish, ID: 1, Time: us(3852), Tokens: 3},
	}
	if diff := cmp.Diff(want, events(steps)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := steps[len(steps)-1].End; got != us(3702) {
		t.Errorf("engine done at %v, want 3.702ms (α2 does not block the engine)", got)
	}
}

func TestSpeedFactor(t *testing.T) {
	for _, speed := range []float64{0.5, 1, 1.5} {
		cfg := testConfig()
		cfg.Speed = speed
		e := newEngine(t, cfg)
		add(t, e, Request{ID: 1, InputTokens: 40, OutputTokens: 1}, 0)
		s := e.Step(0)
		// (1000 + 10·40)·speed µs.
		if want := us(1400 * speed); s.End-s.Start != want {
			t.Errorf("speed %v: step %v, want %v", speed, s.End-s.Start, want)
		}
	}
}

// workload adds n requests with varied sizes and shared prefixes, arriving every 2 ms.
func workload(t testing.TB, e *Batch, n int, idBase uint64) {
	t.Helper()
	for i := range n {
		in := 20 + (i*37)%300
		full := in / 16
		blocks := seqHashes(uint64(i%5)*1000, full) // five prefix families
		add(t, e, Request{ID: idBase + uint64(i), InputTokens: in, OutputTokens: 5 + (i*13)%60, Blocks: blocks},
			time.Duration(i)*2*time.Millisecond)
	}
}

func TestDeterminism(t *testing.T) {
	run := func(noise float64, seed uint64) []Event {
		cfg := testConfig()
		cfg.NumGPUBlocks = 60 // tight enough to preempt
		cfg.Noise, cfg.Seed = noise, seed
		e := newEngine(t, cfg)
		workload(t, e, 200, 0)
		evs := events(drain(t, e))
		if m := e.Metrics(); m.Preemptions == 0 || m.PrefixCacheHits == 0 {
			t.Fatalf("workload too easy to test determinism: %+v", m)
		}
		return evs
	}
	a, b := run(0.2, 1), run(0.2, 1)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different events (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, run(0.2, 2)) {
		t.Error("a different seed with noise gave identical events")
	}
	if !cmp.Equal(run(0, 1), run(0, 2)) {
		t.Error("without noise the seed changed the events")
	}
}

func TestNoiseDistribution(t *testing.T) {
	const n, cv = 200000, 0.2
	z := newNoise(cv, 7)
	var sum, sq float64
	for range n {
		f := z.factor()
		sum += f
		sq += f * f
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if mean < 0.995 || mean > 1.005 || sd < 0.19 || sd > 0.21 {
		t.Errorf("noise factors: mean %.4f, sd %.4f; want ≈1, ≈%v", mean, sd, cv)
	}
}

func TestMetrics(t *testing.T) {
	cfg := testConfig()
	cfg.MaxNumSeqs = 2
	cfg.NumGPUBlocks = 11 // 10 usable
	e := newEngine(t, cfg)
	for id := uint64(1); id <= 3; id++ {
		add(t, e, Request{ID: id, InputTokens: 20, OutputTokens: 4}, 0)
	}
	add(t, e, Request{ID: 4, InputTokens: 20, OutputTokens: 4}, time.Second)
	e.Step(0)
	want := Metrics{
		Waiting:            1,   // request 3: max_num_seqs is 2
		Running:            2,   // requests 1 and 2
		Pending:            1,   // request 4 arrives at 1 s
		KVCacheUsage:       0.4, // 2 requests × ⌈20/16⌉ = 4 of 10 usable blocks
		NumGPUBlocks:       11,
		BlockSize:          16,
		PrefixCacheQueries: 40, // requests 1 and 2 were looked up
	}
	if diff := cmp.Diff(want, e.Metrics()); diff != "" {
		t.Errorf("metrics after one step (-want +got):\n%s", diff)
	}
	drain(t, e)
	// Finished requests' blocks stay cached but count as free.
	want = Metrics{NumGPUBlocks: 11, BlockSize: 16, PrefixCacheQueries: 80}
	if diff := cmp.Diff(want, e.Metrics()); diff != "" {
		t.Errorf("metrics when idle (-want +got):\n%s", diff)
	}
}

func TestClone(t *testing.T) {
	cfg := testConfig()
	cfg.NumGPUBlocks = 80
	cfg.Noise, cfg.Seed = 0.1, 3
	build := func() *Batch {
		e := newEngine(t, cfg)
		workload(t, e, 100, 0)
		for range 40 {
			e.Step(e.NextStep())
		}
		return e
	}
	orig, twin := build(), build()
	clone := orig.Clone()
	if diff := cmp.Diff(twin.Metrics(), clone.Metrics()); diff != "" {
		t.Fatalf("clone's metrics differ (-original +clone):\n%s", diff)
	}

	// Drive the clone hard: new requests, evictions, preemptions.
	workload(t, clone, 150, 10000)
	cloneEvents := events(drain(t, clone))

	// The original is untouched: it behaves exactly like its never-cloned twin.
	if diff := cmp.Diff(events(drain(t, twin)), events(drain(t, orig))); diff != "" {
		t.Fatalf("original changed by its clone (-twin +original):\n%s", diff)
	}
	// A clone given the same inputs as its original reproduces it, noise included.
	orig, twin = build(), build()
	c := orig.Clone()
	workload(t, c, 150, 10000)
	workload(t, twin, 150, 10000)
	if diff := cmp.Diff(events(drain(t, twin)), events(drain(t, c))); diff != "" {
		t.Fatalf("clone diverged from an identical engine (-twin +clone):\n%s", diff)
	}
	if diff := cmp.Diff(cloneEvents, events(drain(t, func() *Batch {
		e := build()
		workload(t, e, 150, 10000)
		return e
	}()))); diff != "" {
		t.Fatalf("first clone's run is not reproducible (-clone +fresh):\n%s", diff)
	}
}

func TestConcurrentClones(t *testing.T) {
	cfg := testConfig()
	e := newEngine(t, cfg)
	workload(t, e, 50, 0)
	for range 20 {
		e.Step(e.NextStep())
	}
	want := events(drain(t, e.Clone()))
	results := make(chan []Event)
	for range 4 {
		go func() {
			c := e.Clone() // concurrent Clones of one engine are allowed
			var evs []Event
			for c.Busy() {
				evs = append(evs, c.Step(c.NextStep()).Events...)
			}
			results <- evs
		}()
	}
	for range 4 {
		if diff := cmp.Diff(want, <-results); diff != "" {
			t.Errorf("concurrent clone diverged (-want +got):\n%s", diff)
		}
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"max_num_seqs", func(c *Config) { c.MaxNumSeqs = 0 }, "max_num_seqs must be at least 1, got 0"},
		{"no budget", func(c *Config) { c.MaxNumBatchedTokens = 0 }, "max_num_batched_tokens must be at least 1, got 0"},
		{"max_model_len", func(c *Config) { c.MaxModelLen = -1 }, "max_model_len must be 0 (unlimited) or positive, got -1"},
		{"NaN alpha", func(c *Config) { c.Coefficients.Alpha[2] = math.NaN() }, "alpha[2] must be a finite number ≥ 0 µs, got NaN"},
		{"budget below seqs", func(c *Config) { c.MaxNumBatchedTokens = 4 }, "max_num_batched_tokens (4) must be at least max_num_seqs (8)"},
		{"block size", func(c *Config) { c.BlockSize = 0 }, "block_size must be at least 1"},
		{"only the null block", func(c *Config) { c.NumGPUBlocks = 1 }, "num_gpu_blocks must be in [2,"},
		{"negative beta", func(c *Config) { c.Coefficients.Beta[1] = -1 }, "beta[1] must be a finite number ≥ 0 µs, got -1"},
		{"speed", func(c *Config) { c.Speed = 0 }, "speed must be a finite factor > 0"},
		{"noise", func(c *Config) { c.Noise = -0.1 }, "noise must be a finite relative standard deviation ≥ 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.edit(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestAddRejectsInvalidRequest(t *testing.T) {
	tests := []struct {
		name string
		r    Request
		want string
	}{
		{"no prompt", Request{ID: 1, OutputTokens: 1}, "input tokens must be at least 1, got 0"},
		{"no output", Request{ID: 1, InputTokens: 5}, "output tokens must be at least 1, got 0"},
		{"too many prompt hashes", Request{ID: 1, InputTokens: 31, OutputTokens: 1, Blocks: []uint64{1, 2}}, "2 prompt block hashes, but 31 input tokens fill only 1 blocks of 16"},
		{"too many output hashes", Request{ID: 1, InputTokens: 16, OutputTokens: 16, OutputBlocks: []uint64{1, 2}}, "2 output block hashes"},
		{"longer than max_model_len", Request{ID: 1, InputTokens: 90, OutputTokens: 20}, "90 input + 20 output tokens exceed max_model_len 100"},
		{"larger than the cache", Request{ID: 1, InputTokens: 60, OutputTokens: 10}, "70 tokens need 5 KV blocks, but the cache has 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxModelLen = 100
			if tt.name == "larger than the cache" {
				cfg.NumGPUBlocks = 5
			}
			e := newEngine(t, cfg)
			err := e.Add(tt.r, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Add: %v; want an error containing %q", err, tt.want)
			}
			if e.Busy() {
				t.Error("a rejected request was kept")
			}
		})
	}
}

func TestIdleStep(t *testing.T) {
	e := newEngine(t, testConfig())
	if e.Busy() || e.NextStep() != -1 {
		t.Fatalf("new engine: busy %v, next step %v", e.Busy(), e.NextStep())
	}
	if s := e.Step(time.Second); s.Start != time.Second || s.End != time.Second || len(s.Events) != 0 {
		t.Errorf("idle step %+v, want an empty step at 1s", s)
	}
}

func TestEventKindString(t *testing.T) {
	got := []string{FirstToken.String(), Token.String(), Finish.String(), Preempted.String(), EventKind(9).String()}
	want := []string{"first-token", "token", "finish", "preempted", "EventKind(9)"}
	if !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
}

// TestAbort: a request aborted while running frees its blocks (still cached: the same prompt
// hits them afterwards) and produces no more events; pending and waiting requests are removed too.
func TestAbort(t *testing.T) {
	e := newEngine(t, testConfig())
	prompt := seqHashes(1, 4) // 64 tokens: one 64-token budget step of prefill
	add(t, e, Request{ID: 1, InputTokens: 64, OutputTokens: 50, Blocks: prompt}, 0)
	for first := false; !first; { // step until its first token: prefilled, decoding
		for _, ev := range e.Step(e.NextStep()).Events {
			first = first || (ev.ID == 1 && ev.Kind == FirstToken)
		}
	}
	if e.Metrics().KVCacheUsage == 0 {
		t.Fatal("the running request holds no blocks")
	}
	add(t, e, Request{ID: 2, InputTokens: 16, OutputTokens: 5}, e.Clock()+time.Hour) // still pending
	if !e.Abort(1) || !e.Abort(2) || e.Abort(1) || e.Abort(99) {
		t.Fatal("Abort reported the wrong presence")
	}
	if m := e.Metrics(); m.Running+m.Waiting+m.Pending != 0 || m.KVCacheUsage != 0 || e.Busy() {
		t.Fatalf("after aborting everything: %+v", m)
	}
	checkKV(t, e)
	hits := e.Metrics().PrefixCacheHits
	add(t, e, Request{ID: 3, InputTokens: 64, OutputTokens: 2, Blocks: prompt}, e.Clock())
	for _, ev := range events(drain(t, e)) {
		if ev.ID == 1 {
			t.Fatalf("an event of the aborted request: %+v", ev)
		}
	}
	if got := e.Metrics().PrefixCacheHits - hits; got != 48 { // all full blocks but the last token's
		t.Errorf("the aborted prompt's blocks gave %d cached tokens to the same prompt, want 48", got)
	}
}
