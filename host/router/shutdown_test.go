package router

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/logbuf"
	"github.com/foresight-router/foresight/internal/promtext"
	"github.com/rs/zerolog"
)

// slowEngine is an engine whose streams send one token every 5 ms: max_tokens of them, then the
// usage chunk and [DONE]; max_tokens 0 streams until the router hangs up.
func slowEngine(t *testing.T) *httptest.Server {
	t.Helper()
	e := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			io.WriteString(w, "vllm:num_requests_waiting 0\nvllm:num_requests_running 0\nvllm:kv_cache_usage_perc 0\n")
		case "/v1/chat/completions":
			var req struct {
				MaxTokens int `json:"max_tokens"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			w.Header().Set("Content-Type", "text/event-stream")
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for i := 0; req.MaxTokens == 0 || i < req.MaxTokens; i++ {
				io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"x"}}]}`+"\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-tick.C:
				}
			}
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", req.MaxTokens, req.MaxTokens+3)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(e.Close)
	return e
}

// TestShutdownDrainsThenCutsWithAnErrorEvent: a stopping router lets a stream shorter than its
// grace (server.shutdownGrace) end intact, and ends one that outlasts it with the router's error
// event (503 router_shutting_down) rather than cutting it with nothing; the access log and the
// metrics count it as a 503.
func TestShutdownDrainsThenCutsWithAnErrorEvent(t *testing.T) {
	engine := slowEngine(t)
	tests := []struct {
		name      string
		maxTokens int    // 0: a stream longer than any grace
		lastEvent string // what the client's last event holds
		status    int    // in the access log and foresight_requests_total
	}{
		// 20 tokens at 5 ms are 100 ms, well inside the 1 s grace: the answer completes.
		{"shorter than the grace", 20, "[DONE]", http.StatusOK},
		// An endless stream outlasts the grace: it ends with the router's error event.
		{"longer than the grace", 0, `"code":"router_shutting_down"`, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(fmt.Sprintf(`
plugins:
  - {name: queue, type: queue-scorer}
pipeline:
  scorers: [{pluginRef: queue}]
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0", shutdownGrace: 1s}
scrape: {interval: 10ms}
endpoints:
  static: [{id: slow, address: %q}]
`, engine.URL)))
			if err != nil {
				t.Fatal(err)
			}
			logs := &logbuf.Buffer{}
			r, err := Start(context.Background(), cfg, zerolog.New(logs))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			waitFor(t, "the engine's first scrape", func() bool {
				g := r.Server().EndpointGauges()
				return len(g) == 1 && g[0].Healthy
			})
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"go on"}],"stream":true,"max_tokens":%d}`, tt.maxTokens)
			resp, err := http.Post("http://"+r.Addr()+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			events := bufio.NewReader(resp.Body)
			if first, err := events.ReadString('\n'); err != nil || !strings.Contains(first, `"content":"x"`) {
				t.Fatalf("first event %q, %v", first, err)
			}

			// Only the API front stops, as Close stops it: the admin listener stays up to be scraped.
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				ctx, cancel := context.WithTimeout(context.Background(), r.grace)
				defer cancel()
				r.drainHTTP(ctx, r.api)
			}()
			rest, err := io.ReadAll(events)
			if err != nil {
				t.Fatalf("reading the stream to its end: %v (after %q)", err, rest)
			}
			<-drained
			last := lastEvent(string(rest))
			if !strings.Contains(last, tt.lastEvent) {
				t.Errorf("the stream's last event is %q, want one holding %s", last, tt.lastEvent)
			}
			m, err := promtext.Scrape(context.Background(), http.DefaultClient, "http://"+r.AdminAddr()+"/metrics")
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := m.With("foresight_requests_total", "code", fmt.Sprint(tt.status)); n != 1 {
				t.Errorf("foresight_requests_total{code=%q} is %v, want 1", fmt.Sprint(tt.status), n)
			}
			if !strings.Contains(logs.String(), fmt.Sprintf(`"status":%d`, tt.status)) {
				t.Errorf("no access line with status %d in the log:\n%s", tt.status, logs)
			}
		})
	}
}

// lastEvent is the last SSE event of a stream.
func lastEvent(stream string) string {
	events := strings.Split(strings.TrimSpace(stream), "\n\n")
	return events[len(events)-1]
}
