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

// leastInflight is a slow scheduler that picks the endpoint with the fewest requests in flight
// (the first of them on a tie), as a load-aware pipeline of plugin processes would, taking delay
// to decide. With together > 0 it decides nothing until that many cycles are in Run at once (or
// 5 s passed): requests that all arrived while the others were being decided, however the test's
// goroutines are scheduled. It records the endpoint of every pick.
type leastInflight struct {
	delay    time.Duration
	together int
	entered  chan struct{}
	mu       sync.Mutex
	picks    map[string]int
}

func (l *leastInflight) Run(_ context.Context, c *sdk.Cycle) *pipeline.Trace {
	time.Sleep(l.delay)
	if l.together > 0 {
		l.entered <- struct{}{}
		deadline := time.Now().Add(5 * time.Second)
		for len(l.entered) < l.together && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	best := 0
	for i, e := range c.Endpoints {
		if e.State.InflightRequests < c.Endpoints[best].State.InflightRequests {
			best = i
		}
	}
	l.mu.Lock()
	l.picks[c.Endpoints[best].ID]++
	l.mu.Unlock()
	return &pipeline.Trace{RequestID: c.Request.ID, Candidates: c.Endpoints, Admitted: true, Order: []int{best}}
}

// burst sends n streamed requests at once to a router over 4 emulated servers that decides with
// leastInflight and the given decision concurrency, and returns the requests each endpoint got.
// With concurrency n the scheduler holds its decisions until all n are under way.
func burst(t *testing.T, n, concurrency int) map[string]int {
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
	sched := &leastInflight{delay: 20 * time.Millisecond, entered: make(chan struct{}, n), picks: map[string]int{}}
	if concurrency >= n {
		sched.together = n
	}
	srv, err := New(Options{Pipeline: sched, Endpoints: set, MaxBodyBytes: 1 << 16, ConnectTimeout: time.Second,
		UpstreamTimeout: 30 * time.Second, Decisions: 8, PrefixBlocks: 1 << 10, DecisionConcurrency: concurrency, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv)
	t.Cleanup(api.Close)
	t.Cleanup(srv.Close)
	body := `{"model":"` + emulator.DefaultModel + `","messages":[{"role":"user","content":"Tell a long story."}],"max_tokens":150,"stream":true}`
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() { // 150 output tokens keep every request in flight until the burst is decided
			defer wg.Done()
			resp, err := http.Post(api.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "[DONE]") {
				t.Errorf("status %d, ending %q", resp.StatusCode, b[max(0, len(b)-120):])
			}
		}()
	}
	wg.Wait()
	return sched.picks
}

// TestABurstIsDecidedOneAfterTheOther: eight requests that arrive together, decided one at a
// time (the default), each see the ones decided before them in flight and spread two per
// endpoint; decided all at once, they all see an idle fleet and herd onto one endpoint. The
// second half shows the first is not luck.
func TestABurstIsDecidedOneAfterTheOther(t *testing.T) {
	if picks := burst(t, 8, 1); len(picks) != 4 || picks["vllm-0"] != 2 || picks["vllm-1"] != 2 || picks["vllm-2"] != 2 || picks["vllm-3"] != 2 {
		t.Errorf("one decision at a time: picks %v, want 2 per endpoint", picks)
	}
	if picks := burst(t, 8, 8); picks["vllm-0"] != 8 {
		t.Errorf("eight decisions at once: picks %v, want the herd on vllm-0 that sequencing prevents", picks)
	}
}
