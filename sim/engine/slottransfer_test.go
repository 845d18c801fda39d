package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// remote returns r as the decode half of a disaggregated request.
func remote(r Request) Request {
	r.RemotePrefill = true
	return r
}

// TestSlotRemotePrefillTTFT: a remote-prefill request's first token comes after its transfer,
// per-token × its whole prompt and not scaled by the load, in place of its prefill; its later
// tokens follow the inter-token latency as usual; it computes no prefill token.
func TestSlotRemotePrefillTTFT(t *testing.T) {
	cfg := slotTestConfig()
	cfg.KVTransfer.PerToken = 100 * time.Microsecond
	e := newSlot(t, cfg)
	for id := uint64(1); id <= 3; id++ {
		if err := e.Add(req(id, 100, 1), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Add(remote(Request{ID: 4, InputTokens: 100, OutputTokens: 3, Blocks: slotBlocks(1, 2, 3, 4, 5, 6)}), 0); err != nil {
		t.Fatal(err)
	}
	if s := e.Step(0); s.PrefillTokens != 300 {
		t.Errorf("the admitting instant prefills %d tokens, want the 300 of the three local requests", s.PrefillTokens)
	}
	var evs []Event
	for e.Busy() {
		evs = append(evs, e.Step(e.NextStep()).Events...)
	}
	// 4 slots occupied, f = 4: the local ones' TTFT is (20 + 100 · 0.1) · 4 = 120 ms. The
	// remote one's is 100 · 100 µs = 10 ms, unscaled; its next tokens come 10 ms · 4 later each.
	want := []Event{
		ev(FirstToken, 4, 10*ms, 1),
		ev(Token, 4, 50*ms, 2),
		ev(Token, 4, 90*ms, 3), ev(Finish, 4, 90*ms, 3),
		ev(FirstToken, 1, 120*ms, 1), ev(Finish, 1, 120*ms, 1),
		ev(FirstToken, 2, 120*ms, 1), ev(Finish, 2, 120*ms, 1),
		ev(FirstToken, 3, 120*ms, 1), ev(Finish, 3, 120*ms, 1),
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// Its prompt blocks went through the cache like any prompt's.
	if m := e.Metrics(); m.PrefixCacheQueries != 400 {
		t.Errorf("prefix cache queries %d, want 400", m.PrefixCacheQueries)
	}
}

// TestSlotTransferRules: llm-d-inference-sim's choice between the transfer latency and the
// per-token time, and the jitter of each.
func TestSlotTransferRules(t *testing.T) {
	cfg := slotTestConfig()
	cfg.KVTransfer = KVTransfer{Latency: 7 * ms, PerToken: 100 * time.Microsecond}
	e := newSlot(t, cfg)
	for _, in := range []int{10, 1000} { // the latency alone, whatever the prompt
		if d := e.transferTime(in); d != 7*ms {
			t.Errorf("latency set, %d-token prompt: %v, want 7ms", in, d)
		}
	}
	cfg.KVTransfer.Latency = 0 // no latency: the per-token time × the whole prompt
	if d := newSlot(t, cfg).transferTime(1000); d != 100*ms {
		t.Errorf("per-token: %v, want 1000 · 100µs = 100ms", d)
	}
	cfg.Slot.KVCacheTransferTimeStdDev = 200 * ms // far above the mean: clamped to [30, 170] ms
	e = newSlot(t, cfg)
	seen := map[time.Duration]bool{}
	for range 2000 {
		d := e.transferTime(1000)
		if d < 30*ms || d > 170*ms || d%ms != 0 {
			t.Fatalf("per-token sample %v outside [30ms, 170ms] or not whole ms", d)
		}
		seen[d] = true
	}
	if !seen[30*ms] || !seen[170*ms] || len(seen) < 10 {
		t.Errorf("per-token samples %v: want both clamps and values between", seen)
	}
	e.ExpectStepTimes()
	if d := e.transferTime(1000); d != 100*ms {
		t.Errorf("without jitter: %v, want the mean 100ms", d)
	}
	cfg.KVTransfer.Latency, cfg.Slot.KVCacheTransferLatencyStdDev = 10*ms, 3*ms
	e = newSlot(t, cfg)
	for range 2000 {
		if d := e.transferTime(1000); d < 3*ms || d > 17*ms {
			t.Fatalf("latency sample %v outside [3ms, 17ms]", d)
		}
	}
	// Speed slows the GPU, not the network.
	cfg.Speed = 2
	e = newSlot(t, cfg)
	e.ExpectStepTimes()
	if d := e.transferTime(1000); d != 10*ms {
		t.Errorf("at speed 2: %v, want 10ms", d)
	}
}

// TestSlotPrefillHalf: a request of one output token (a prefill half) finishes with its first
// token; its decode half, with a zero-cost transfer, gets its first token 1 ns after admission.
func TestSlotPrefillHalf(t *testing.T) {
	e := newSlot(t, slotTestConfig())
	evs := runSlot(t, e, []slotArrival{{0, req(1, 100, 1)}})
	if want := []Event{ev(FirstToken, 1, 30*ms, 1), ev(Finish, 1, 30*ms, 1)}; !cmp.Equal(want, evs) {
		t.Errorf("prefill half: %v, want %v", evs, want)
	}
	evs = runSlot(t, e, []slotArrival{{40 * ms, remote(req(2, 100, 2))}})
	if evs[0].Kind != FirstToken || evs[0].Time != 40*ms+1 {
		t.Errorf("decode half with a free transfer: %v", evs)
	}
}

// slotPDWorkload is slotWorkload with every third request the decode half of a disaggregated
// request.
func slotPDWorkload() []slotArrival {
	as := slotWorkload()
	for i := range as {
		as[i].r.RemotePrefill = i%3 == 0
	}
	return as
}

func pdJitteryConfig(seed uint64) Config {
	cfg := jitteryConfig(seed)
	cfg.KVTransfer.PerToken = 50 * time.Microsecond
	cfg.Slot.KVCacheTransferTimeStdDev = 4 * ms
	return cfg
}

func TestSlotRemotePrefillDeterministic(t *testing.T) {
	a := runSlot(t, newSlot(t, pdJitteryConfig(7)), slotPDWorkload())
	if diff := cmp.Diff(a, runSlot(t, newSlot(t, pdJitteryConfig(7)), slotPDWorkload())); diff != "" {
		t.Fatalf("same seed, different events (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, runSlot(t, newSlot(t, pdJitteryConfig(8)), slotPDWorkload())) {
		t.Error("seeds 7 and 8 gave the same events: no jitter")
	}
	if cmp.Equal(a, runSlot(t, newSlot(t, jitteryConfig(7)), slotWorkload())) {
		t.Error("remote prefills changed nothing")
	}
}

// TestSlotSpeculateRemotePrefill speculates a remote-prefill arrival (and an ordinary one) before
// every step of a jittery engine serving both kinds: each gives the clone's first-token time and
// restores the engine exactly, which then runs like a twin that never speculated.
func TestSlotSpeculateRemotePrefill(t *testing.T) {
	cfg := pdJitteryConfig(3)
	cfg.NumGPUBlocks = 20
	e, twin := newSlot(t, cfg), newSlot(t, cfg)
	for _, a := range slotPDWorkload() {
		for _, x := range []*Slot{e, twin} {
			if err := x.Add(a.r, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got, want []Event
	for i := 0; e.Busy(); i++ {
		r := Request{ID: 1e6 + uint64(i), InputTokens: 30 + (i*53)%200, OutputTokens: 2, Blocks: []uint64{uint64(i%4) * 100}, RemotePrefill: i%2 == 0}
		now := e.Clock()
		before := slotStateOf(e)
		// Both draw from the jitter stream: the clone and the speculation must draw alike.
		wantTTFT := firstTokenAt(t, e.Clone(), r, now)
		var gotTTFT time.Duration
		e.Speculate(func(s Engine) { gotTTFT = firstTokenAt(t, s, r, now) })
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
}
