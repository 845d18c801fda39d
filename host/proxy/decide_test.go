package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/rs/zerolog"
)

// picker is a slow scheduler, as a pipeline of plugin processes would be: it takes delay to decide
// and records every decision it took (decisions taken again included), the most it had under way
// at once, and where each request went.
//
// By default it picks the endpoint with the fewest requests in flight, the first on a tie: on one
// state every request agrees. With byID it picks the endpoint with the highest prefix match, and
// on a tie the one the request's x-request-id ends with ("r5" → index 5 mod endpoints).
// hold delays the decision of the request so named until released is closed.
type picker struct {
	delay    time.Duration
	byID     bool
	hold     string
	released chan struct{}

	mu       sync.Mutex
	runs     map[string]int // decisions by request ID
	active   int
	maxAtNow int
	picks    map[string]int // by endpoint: the picks of the last decision of each request
	last     map[string]string
}

func newPicker(delay time.Duration) *picker {
	return &picker{delay: delay, runs: map[string]int{}, picks: map[string]int{}, last: map[string]string{}}
}

func (l *picker) Run(_ context.Context, c *sdk.Cycle) *pipeline.Trace {
	l.mu.Lock()
	l.active++
	l.maxAtNow = max(l.maxAtNow, l.active)
	l.mu.Unlock()
	time.Sleep(l.delay)
	if c.Request.ID == l.hold {
		<-l.released
	}
	best := 0
	if l.byID {
		best = int(c.Request.ID[len(c.Request.ID)-1]-'0') % len(c.Endpoints)
	}
	for i, e := range c.Endpoints {
		if l.byID && e.State.PrefixMatch > c.Endpoints[best].State.PrefixMatch ||
			!l.byID && e.State.InflightRequests < c.Endpoints[best].State.InflightRequests {
			best = i
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	l.runs[c.Request.ID]++
	l.last[c.Request.ID] = c.Endpoints[best].ID
	return &pipeline.Trace{RequestID: c.Request.ID, Candidates: c.Endpoints, Admitted: true, Order: []int{best}}
}

// where returns how many requests each endpoint got, from each request's last decision.
func (l *picker) where() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, ep := range l.last {
		out[ep]++
	}
	return out
}

// startRouter starts a router over 4 emulated servers that decides with sched and the given
// decision concurrency, and returns its URL.
func startRouter(t *testing.T, sched Scheduler, concurrency int) string {
	t.Helper()
	fleet, err := emulator.Start(4, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	var eps []endpoints.Endpoint
	for i, a := range fleet.Addrs() {
		eps = append(eps, endpoints.Endpoint{ID: fmt.Sprintf("vllm-%d", i), Address: a})
	}
	set := startSet(t, time.Hour, eps) // one scrape: only the router's own counts move
	srv, err := New(Options{Pipeline: sched, Endpoints: set, MaxBodyBytes: 1 << 16, ConnectTimeout: time.Second,
		UpstreamTimeout: 30 * time.Second, Decisions: 8, PrefixBlocks: 1 << 10, DecisionConcurrency: concurrency, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv)
	t.Cleanup(api.Close)
	t.Cleanup(srv.Close)
	return api.URL
}

// send posts a streamed chat request named id with the prompt to url and checks it completes.
// 150 output tokens keep every request in flight until a burst is decided.
func send(t *testing.T, url, id, prompt string) {
	body := `{"model":"` + emulator.DefaultModel + `","messages":[{"role":"user","content":"` + prompt + `"}],"max_tokens":150,"stream":true}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderRequestID, id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "[DONE]") {
		t.Errorf("%s: status %d, ending %q", id, resp.StatusCode, b[max(0, len(b)-120):])
	}
}

// burst sends n requests r0 … r(n-1) at once to url and waits for their answers.
func burst(t *testing.T, url string, n int, prompt string) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); send(t, url, fmt.Sprintf("r%d", i), prompt) }()
	}
	wg.Wait()
}

// Eight requests that arrive together, on a scheduler where every request picks the least loaded
// endpoint, spread two per endpoint whether they are decided one at a time or in rounds: in a
// round, only the first request of those that agree on an endpoint goes there, the others are
// decided again on the state that counts it.
func TestABurstSpreadsAsIfDecidedInOrder(t *testing.T) {
	for _, concurrency := range []int{1, 0} {
		sched := newPicker(20 * time.Millisecond)
		burst(t, startRouter(t, sched, concurrency), 8, "Tell a long story.")
		if w := sched.where(); len(w) != 4 || w["vllm-0"] != 2 || w["vllm-1"] != 2 || w["vllm-2"] != 2 || w["vllm-3"] != 2 {
			t.Errorf("decisionConcurrency %d: requests by endpoint %v, want 2 on each", concurrency, w)
		}
		if concurrency == 1 && sched.maxAtNow != 1 {
			t.Errorf("decisionConcurrency 1: %d decisions under way at once, want 1", sched.maxAtNow)
		}
		if concurrency == 0 && sched.maxAtNow < 2 {
			t.Errorf("rounds: at most %d decisions under way at once, want several", sched.maxAtNow)
		}
	}
}

// When the requests of a round pick different endpoints, the round dispatches them all: eight
// requests that spread by name take a few rounds, not eight, and none is decided more than twice.
func TestARoundDispatchesDifferentPicksTogether(t *testing.T) {
	sched := newPicker(20 * time.Millisecond)
	sched.byID = true
	url := startRouter(t, sched, 0)
	burst(t, url, 8, "Tell a long story.")
	if w := sched.where(); len(w) != 4 || w["vllm-0"] != 2 || w["vllm-3"] != 2 {
		t.Errorf("requests by endpoint %v, want 2 on each", w)
	}
	if sched.maxAtNow < 4 {
		t.Errorf("at most %d decisions under way at once, want at least 4 (a round of the burst)", sched.maxAtNow)
	}
	for id, n := range sched.runs {
		if n > 2 {
			t.Errorf("%s decided %d times", id, n)
		}
	}
}

// A request of a round that shares its prompt with one sent before it in the round is decided
// again: its prefix match rose on that endpoint, and the second decision follows the prefix. r0
// and r1 wait together behind a held request and would pick vllm-0 and vllm-1 by name on an empty
// prefix index; whichever queued second is decided again and joins the first.
func TestARoundRedecidesWhenThePrefixMatchRose(t *testing.T) {
	sched := newPicker(5 * time.Millisecond)
	sched.byID, sched.hold, sched.released = true, "h2", make(chan struct{})
	url := startRouter(t, sched, 0)
	done := make(chan struct{})
	go func() { defer close(done); send(t, url, "h2", "A request that holds the decider.") }()
	waitFor(t, "the held decision", func() bool { sched.mu.Lock(); defer sched.mu.Unlock(); return sched.active == 1 })
	prompt := strings.Repeat("The same long system prompt shared by both requests. ", 40)
	var wg sync.WaitGroup
	for _, id := range []string{"r0", "r1"} {
		wg.Add(1)
		go func() { defer wg.Done(); send(t, url, id, prompt) }()
	}
	time.Sleep(100 * time.Millisecond) // both queue behind h2
	close(sched.released)
	wg.Wait()
	<-done
	sched.mu.Lock()
	defer sched.mu.Unlock()
	if sched.last["r0"] != sched.last["r1"] || sched.runs["r0"]+sched.runs["r1"] != 3 {
		t.Errorf("r0 on %s after %d decisions, r1 on %s after %d; want both on one endpoint, one of them decided twice",
			sched.last["r0"], sched.runs["r0"], sched.last["r1"], sched.runs["r1"])
	}
}

// The most a round takes: server.decisionConcurrency when set, else twice the endpoints or 16.
func TestRoundLimit(t *testing.T) {
	for _, tc := range []struct{ concurrency, endpoints, want int }{
		{0, 0, 16}, {0, 4, 16}, {0, 8, 16}, {0, 100, 200}, {5, 100, 5}, {1, 4, 1},
	} {
		if got := RoundLimit(tc.concurrency, tc.endpoints); got != tc.want {
			t.Errorf("RoundLimit(%d, %d) = %d, want %d", tc.concurrency, tc.endpoints, got, tc.want)
		}
	}
}
