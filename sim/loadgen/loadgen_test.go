package loadgen

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/workload"
)

const testPreset = "llama-3.1-8b-h100-tp2"

// startFleet starts two emulated servers for the test.
func startFleet(t *testing.T) *emulator.Fleet {
	t.Helper()
	f, err := emulator.Start(2, 0, testPreset, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func newGenerator(t *testing.T, opts Options) *Generator {
	t.Helper()
	if opts.Model == "" {
		opts.Model = emulator.DefaultModel
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// collect gathers results by ID.
type collect struct {
	mu  sync.Mutex
	got map[uint64]Result
}

func (c *collect) add(r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.got == nil {
		c.got = map[uint64]Result{}
	}
	c.got[r.ID] = r
}

// tinyWorkload is 10 requests over 900 ms with short answers: requests 0 and 5 share their two
// leading blocks, and 5 comes 500 ms after 0 finished its prefill, so the engine's prefix cache
// serves them; every third request is not streamed; odd ones carry an SLO no engine can miss
// (1 minute), request 8 one none can meet (1 µs).
func tinyWorkload() []workload.Request {
	reqs := make([]workload.Request, 10)
	for i := range reqs {
		r := &reqs[i]
		r.ID = uint64(i)
		r.Arrival = time.Duration(i) * 100 * time.Millisecond
		r.InputTokens = 40 + 7*i
		r.OutputTokens = 3 + i%5
		r.Blocks = []uint64{uint64(1000 + 10*i), uint64(1001 + 10*i)}
		r.Streaming = i%3 != 0
		if i%2 == 1 {
			r.SLO = workload.SLO{TTFTMs: 60_000, TPOTMs: 60_000}
		}
		if i >= 7 {
			r.Priority = -1
		}
	}
	reqs[5].Blocks = reqs[0].Blocks
	reqs[8].SLO = workload.SLO{TTFTMs: 0.001}
	return reqs
}

func TestRunMeasures(t *testing.T) {
	f := startFleet(t)
	var c collect
	g := newGenerator(t, Options{BaseURL: "http://" + f.Addrs()[0], OnResult: c.add})
	reqs := tinyWorkload()
	start := time.Now()
	snap := g.Run(context.Background(), reqs)
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("run took %v for 10 short requests over 0.9 s", el)
	}
	if len(c.got) != len(reqs) {
		t.Fatalf("%d results, want %d", len(c.got), len(reqs))
	}
	for i := range reqs {
		r, res := &reqs[i], c.got[uint64(i)]
		if res.Kind != OK || res.Status != http.StatusOK {
			t.Errorf("request %d: kind %v status %d (%s), want ok 200", i, res.Kind, res.Status, res.Err)
			continue
		}
		// The emulator counts BOS + one token per word, and generates exactly max_tokens.
		if res.PromptTokens != r.InputTokens+1 || res.CompletionTokens != r.OutputTokens {
			t.Errorf("request %d: usage %d prompt / %d completion tokens, want %d / %d",
				i, res.PromptTokens, res.CompletionTokens, r.InputTokens+1, r.OutputTokens)
		}
		if res.TTFT <= 0 || res.TTFT > res.E2E || res.E2E > 2*time.Second {
			t.Errorf("request %d: TTFT %v, E2E %v: want 0 < TTFT <= E2E < 2s", i, res.TTFT, res.E2E)
		}
		if r.Streaming {
			// Tokens come one engine step apart: milliseconds, not microseconds or seconds.
			if res.TPOT < 100*time.Microsecond || res.TPOT > 200*time.Millisecond {
				t.Errorf("request %d: TPOT %v, want a step time (0.1–200 ms)", i, res.TPOT)
			}
		} else if res.TPOT != 0 || res.TTFT != res.E2E {
			t.Errorf("request %d (not streamed): TPOT %v, TTFT %v, E2E %v: want TPOT 0 and TTFT = E2E", i, res.TPOT, res.TTFT, res.E2E)
		}
		if want := Objective(r.Priority); res.Objective != want {
			t.Errorf("request %d: objective %q, want %q", i, res.Objective, want)
		}
		if got, want := res.Sent, r.Arrival; got < want || got > want+200*time.Millisecond {
			t.Errorf("request %d: sent at %v, want its arrival %v (+ up to 200 ms)", i, got, want)
		}
	}
	// Request 5 repeats request 0's two blocks: the engine serves them (32 words + BOS = 2 whole
	// blocks of 16) from its prefix cache.
	if got := c.got[5].CachedTokens; got < 32 {
		t.Errorf("request 5 shares 2 blocks with request 0 but had %d cached tokens, want >= 32", got)
	}
	if got := c.got[1].CachedTokens; got != 0 {
		t.Errorf("request 1 shares nothing but had %d cached tokens", got)
	}

	if snap.Dispatched != 10 || snap.InFlight != 0 || snap.Skipped != 0 {
		t.Errorf("dispatched %d, in flight %d, skipped %d; want 10, 0, 0", snap.Dispatched, snap.InFlight, snap.Skipped)
	}
	run := snap.Run
	if run.Ended != 10 || run.Count(OK) != 10 || run.TTFT.N != 10 || run.E2E.N != 10 {
		t.Errorf("run summary %+v: want 10 ended, all OK, 10 TTFTs and E2Es", run)
	}
	// Streamed requests: 1, 2, 4, 5, 7, 8 (every third is not).
	if run.TPOT.N != 6 {
		t.Errorf("%d TPOT samples, want the 6 streamed requests", run.TPOT.N)
	}
	// Objectives: 1, 3, 5, 7, 9 (met, 1 minute) and 8 (missed, 1 µs).
	if a, ok := run.Attainment(); !ok || run.WithSLO != 6 || run.MetSLO != 5 {
		t.Errorf("attainment %v (%d of %d), want 5 of 6", a, run.MetSLO, run.WithSLO)
	}
	if got := snap.ByObjective[ObjectiveBatch].Ended; got != 3 {
		t.Errorf("%d batch requests, want 3 (7, 8, 9)", got)
	}
	if !(run.TTFT.P50 > 0 && run.TTFT.P50 <= run.TTFT.P95 && run.TTFT.P95 <= run.TTFT.P99) {
		t.Errorf("TTFT percentiles not ordered: %+v", run.TTFT)
	}
	if snap.Recent.Ended != 10 {
		t.Errorf("recent window (10 s) holds %d, want all 10", snap.Recent.Ended)
	}
	if hit, ok := run.PrefixHitRate(); !ok || hit <= 0 {
		t.Errorf("prefix hit rate %v, want > 0 (request 5)", hit)
	}
	checkNoLeak(t) // kept-alive connections included
}

// TestRunCounts checks that every kind of failure is counted, not dropped, against a server that
// answers by the request's session.
func TestRunCounts(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-request-id", "rid-"+r.Header.Get("x-session-id"))
		switch r.Header.Get("x-session-id") {
		case "shed":
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"rejected: no endpoint meets the SLO"}}`)
		case "bad":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"x-llm-d-slo-ttft-ms: bad"}}`)
		case "down":
			w.WriteHeader(http.StatusBadGateway)
		case "broken": // a stream that stops without [DONE]
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" a\"}]}\n\n")
		case "garbage":
			fmt.Fprint(w, "data: {not json\n\n")
		case "erred": // text, then an engine's error event in place of the next chunk
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" a\"}]}\n\n")
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"engine died\",\"code\":500}}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		default:
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" a\"}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" b\"}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	sessions := []string{"ok", "shed", "bad", "down", "broken", "garbage", "ok", "erred"}
	want := map[string]Kind{"ok": OK, "shed": Shed, "bad": ClientError, "down": ServerError, "broken": StreamError,
		"garbage": StreamError, "erred": StreamError}
	reqs := make([]workload.Request, len(sessions))
	for i, s := range sessions {
		reqs[i] = workload.Request{ID: uint64(i), SessionID: s, InputTokens: 4, OutputTokens: 2, Streaming: true,
			SLO: workload.SLO{TTFTMs: 10_000}}
	}
	var c collect
	g := newGenerator(t, Options{BaseURL: ts.URL, OnResult: c.add})
	snap := g.Run(context.Background(), reqs)
	for i, s := range sessions {
		res := c.got[uint64(i)]
		if res.Kind != want[s] {
			t.Errorf("session %q: kind %v (%s), want %v", s, res.Kind, res.Err, want[s])
		}
		if res.RequestID != "rid-"+s {
			t.Errorf("session %q: request id %q, want the response's", s, res.RequestID)
		}
	}
	if got := c.got[1].Err; !strings.Contains(got, "429") || !strings.Contains(got, "no endpoint meets the SLO") {
		t.Errorf("shed error %q, want the status and the router's reason", got)
	}
	if got := c.got[7].Err; !strings.Contains(got, "engine died") {
		t.Errorf("error event: %q, want its message", got)
	}
	run := snap.Run
	if run.Ended != 8 || run.Count(OK) != 2 || run.Count(Shed) != 1 || run.Errors() != 5 {
		t.Errorf("summary: %d ended, %v by kind, %d errors; want 8, 2 ok, 1 shed, 5 errors", run.Ended, run.ByKind, run.Errors())
	}
	// Every request had a TTFT objective: the 6 that failed miss it.
	if run.WithSLO != 8 || run.MetSLO != 2 {
		t.Errorf("SLO %d of %d, want 2 of 8", run.MetSLO, run.WithSLO)
	}
	if run.TPOT.N != 2 || run.CompletionTokens != 4 {
		t.Errorf("TPOT samples %d, completion tokens %d; want 2, 4", run.TPOT.N, run.CompletionTokens)
	}

	// Nobody listening: a connection error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	g = newGenerator(t, Options{BaseURL: "http://" + addr})
	snap = g.Run(context.Background(), reqs[:1])
	if snap.Run.Count(ConnError) != 1 {
		t.Errorf("against a closed port: %v by kind, want 1 conn", snap.Run.ByKind)
	}
}

// longWorkload is n streamed requests at t = 0 with 2,000-token answers (about 15 s each on the
// emulator), which only a cancellation ends quickly.
func longWorkload(n int) []workload.Request {
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: uint64(i), InputTokens: 30, OutputTokens: 2000, Streaming: true}
	}
	return reqs
}

// waitFor polls cond every 5 ms for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually.Wait(t, 5*time.Second, what, cond)
}

// leaked returns the stacks of goroutines the generator or its HTTP client left behind.
func leaked() []string {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	var out []string
	for i, g := range strings.Split(string(buf[:n]), "\n\n") {
		if i == 0 {
			continue // this goroutine
		}
		if strings.Contains(g, "sim/loadgen.") || strings.Contains(g, "net/http.(*persistConn)") {
			out = append(out, g)
		}
	}
	return out
}

func checkNoLeak(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		l := leaked()
		if len(l) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines left behind:\n%s", len(l), strings.Join(l, "\n\n"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCancel checks that cancelling the context ends every request at once, counts them as cut,
// and leaves no goroutine; and that MaxInFlight skips and counts arrivals beyond it.
func TestCancel(t *testing.T) {
	f := startFleet(t)
	g := newGenerator(t, Options{BaseURL: "http://" + f.Addrs()[1], MaxInFlight: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Snapshot)
	go func() { done <- g.Run(ctx, longWorkload(5)) }()
	// Wait until the three admitted streams are under way.
	waitFor(t, "3 requests in flight", func() bool {
		s := g.Snapshot()
		return s.InFlight == 3 && s.Skipped == 2
	})
	time.Sleep(100 * time.Millisecond) // let them reach the stream
	cancel()
	var snap Snapshot
	select {
	case snap = <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return within 2 s of the cancellation")
	}
	if snap.Dispatched != 3 || snap.Skipped != 2 || snap.InFlight != 0 || snap.Run.Count(Cut) != 3 {
		t.Errorf("dispatched %d, skipped %d, in flight %d, by kind %v; want 3, 2, 0, 3 cut",
			snap.Dispatched, snap.Skipped, snap.InFlight, snap.Run.ByKind)
	}
	if snap.Run.WithSLO != 0 {
		t.Errorf("cut requests counted for the SLO: %d", snap.Run.WithSLO)
	}
	checkNoLeak(t)
}

// TestDurationAndDrain checks the bounds: nothing is sent at or after Duration, and requests
// still running Drain after it are cut.
func TestDurationAndDrain(t *testing.T) {
	f := startFleet(t)
	g := newGenerator(t, Options{BaseURL: "http://" + f.Addrs()[0], Duration: 250 * time.Millisecond, Drain: 200 * time.Millisecond})
	reqs := longWorkload(10)
	for i := range reqs {
		reqs[i].Arrival = time.Duration(i) * 100 * time.Millisecond // 0, 100, 200 ms are within 250 ms
	}
	start := time.Now()
	snap := g.Run(context.Background(), reqs)
	el := time.Since(start)
	// Dispatching ends at 250 ms, the drain at 450 ms.
	if el < 400*time.Millisecond || el > 1500*time.Millisecond {
		t.Errorf("run took %v, want about 450 ms (duration 250 ms + drain 200 ms)", el)
	}
	if snap.Dispatched != 3 || snap.Run.Count(Cut) != 3 {
		t.Errorf("dispatched %d, by kind %v; want 3 dispatched, 3 cut", snap.Dispatched, snap.Run.ByKind)
	}
	checkNoLeak(t)
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no URL", Options{Model: "m"}, "base URL"},
		{"not http", Options{BaseURL: "ftp://x", Model: "m"}, "base URL"},
		{"no model", Options{BaseURL: "http://127.0.0.1:1"}, "model"},
		{"negative duration", Options{BaseURL: "http://127.0.0.1:1", Model: "m", Duration: -1}, "duration"},
		{"negative drain", Options{BaseURL: "http://127.0.0.1:1", Model: "m", Drain: -1}, "drain"},
		{"negative cap", Options{BaseURL: "http://127.0.0.1:1", Model: "m", MaxInFlight: -1}, "max in flight"},
		{"both", Options{BaseURL: "http://127.0.0.1:1", Targets: []string{"http://127.0.0.1:2"}, Model: "m"}, "one or the other"},
		{"bad target", Options{Targets: []string{"http://127.0.0.1:2", "127.0.0.1:3"}, Model: "m"}, `"127.0.0.1:3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error about %s", err, tt.want)
			}
		})
	}
}

func TestMetSLO(t *testing.T) {
	slo := workload.SLO{TTFTMs: 100, TPOTMs: 10}
	tests := []struct {
		name string
		r    Result
		want bool
	}{
		{"within both", Result{Kind: OK, SLO: slo, TTFT: 90 * time.Millisecond, TPOT: 9 * time.Millisecond}, true},
		{"at both bounds", Result{Kind: OK, SLO: slo, TTFT: 100 * time.Millisecond, TPOT: 10 * time.Millisecond}, true},
		{"TTFT late", Result{Kind: OK, SLO: slo, TTFT: 101 * time.Millisecond, TPOT: 9 * time.Millisecond}, false},
		{"TPOT slow", Result{Kind: OK, SLO: slo, TTFT: 90 * time.Millisecond, TPOT: 11 * time.Millisecond}, false},
		{"one token: no TPOT to miss", Result{Kind: OK, SLO: slo, TTFT: 90 * time.Millisecond}, true},
		{"shed", Result{Kind: Shed, SLO: slo}, false},
		{"5xx", Result{Kind: ServerError, SLO: slo}, false},
		{"no SLO, ok", Result{Kind: OK, TTFT: time.Hour}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.MetSLO(); got != tt.want {
				t.Errorf("MetSLO = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRecentWindow checks that Recent keeps only what ended in the last Window.
func TestRecentWindow(t *testing.T) {
	var s stats
	s.window = 10 * time.Second
	start := time.Now()
	s.begin(start)
	for i, end := range []time.Duration{1, 5, 12, 18, 19} { // seconds
		s.dispatch()
		s.add(&Result{ID: uint64(i), Kind: OK, TTFT: time.Duration(i+1) * time.Millisecond}, end*time.Second)
	}
	snap := s.snapshot(start.Add(20 * time.Second))
	// At 20 s the window is (10 s, 20 s]: the requests that ended at 12, 18, 19 s, TTFTs 3, 4, 5 ms.
	if snap.Recent.Ended != 3 || snap.Recent.TTFT.P50 != 4 {
		t.Errorf("recent: %d ended, TTFT p50 %v; want 3, 4 ms", snap.Recent.Ended, snap.Recent.TTFT.P50)
	}
	// The run: TTFTs 1..5 ms; p95 = 4 + 0.8·(5 − 4) = 4.8 (rank 0.95·4 = 3.8).
	if snap.Run.Ended != 5 || math.Abs(snap.Run.TTFT.P95-4.8) > 1e-9 {
		t.Errorf("run: %d ended, TTFT p95 %v; want 5, 4.8 ms", snap.Run.Ended, snap.Run.TTFT.P95)
	}
	if !slices.Equal(snap.Run.ByKind[:], []int{5, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("by kind %v", snap.Run.ByKind)
	}
}

// TestFailuresGrouped checks that failed requests are grouped by kind and by message with its
// numbers blanked out, most frequent first, with the first message of each group as its example;
// shed, cut and OK requests are not failures.
func TestFailuresGrouped(t *testing.T) {
	var s stats
	for i, r := range []Result{
		{Kind: ClientError, Err: "request 7: 9000 input tokens exceed max_model_len 8192"},
		{Kind: ServerError, Err: "no endpoint is ready"},
		{Kind: ClientError, Err: "request 9: 8500 input tokens exceed max_model_len 8192"},
		{Kind: ServerError, Err: "request 3: 9000 input tokens exceed max_model_len 8192"}, // another kind
		{Kind: Shed, Err: "shed"}, {Kind: Cut, Err: "context canceled"}, {Kind: OK},
		{Kind: ClientError, Err: "request 12: 10000 input tokens exceed max_model_len 8192"},
	} {
		s.add(&r, time.Duration(i)*time.Millisecond)
	}
	got := s.snapshot(time.Now()).Run.Failures
	want := []Failure{
		{Kind: ClientError, Example: "request 7: 9000 input tokens exceed max_model_len 8192", Count: 3},
		{Kind: ServerError, Example: "no endpoint is ready", Count: 1},
		{Kind: ServerError, Example: "request 3: 9000 input tokens exceed max_model_len 8192", Count: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("failures %+v, want %+v", got, want)
	}
}
