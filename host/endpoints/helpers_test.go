package endpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
)

// deadline is how long a test waits for something that should happen within a few scrapes.
const deadline = 10 * time.Second

// waitFor polls cond until it holds or deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually.Wait(t, deadline, what, cond)
}

// fastConfig scrapes every 5 ms and probes every 20 ms. Its Client is left to the set (a
// DefaultClient of its own, Set.Config().Client, whose idle connections a test can close), so
// the loops read /metrics over their own connections, as in the router.
func fastConfig() Config {
	return Config{
		Interval: 5 * time.Millisecond, ProbeInterval: 20 * time.Millisecond, ModelsInterval: time.Second,
		Timeout: 2 * time.Second, FailAfter: 3,
	}
}

// run starts s.Run and returns a function that stops it and waits for Run to return; the
// stop is also registered as a cleanup.
func run(t *testing.T, s *Set) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(deadline):
				t.Errorf("Run did not return within %v of its context ending", deadline)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// checkGoroutines waits until no more goroutines run than before.
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(end) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeEngine serves /metrics, /health and /v1/models with answers a test changes on the fly.
type fakeEngine struct {
	mu            sync.Mutex
	metricsStatus int
	metrics       string
	healthStatus  int
	models        []string
	scrapes       int
	probes        int
}

func newFakeEngine(t *testing.T, metrics string) (*fakeEngine, *httptest.Server) {
	t.Helper()
	f := &fakeEngine{metricsStatus: http.StatusOK, metrics: metrics, healthStatus: http.StatusOK, models: []string{"m"}}
	ts := httptest.NewServer(f) // binds 127.0.0.1
	t.Cleanup(ts.Close)
	return f, ts
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/metrics":
		f.scrapes++
		w.WriteHeader(f.metricsStatus)
		_, _ = w.Write([]byte(f.metrics))
	case "/health":
		f.probes++
		w.WriteHeader(f.healthStatus)
	case "/v1/models":
		data := []map[string]string{}
		for _, m := range f.models {
			data = append(data, map[string]string{"id": m, "object": "model"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeEngine) set(change func(f *fakeEngine)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeEngine) count() (scrapes, probes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scrapes, f.probes
}

// addr returns a test server's host:port.
func addr(ts *httptest.Server) string { return strings.TrimPrefix(ts.URL, "http://") }

// vllmBody is a vLLM /metrics body with the given gauges (one model).
func vllmBody(waiting, running int, kv float64) string {
	return fmt.Sprintf(`# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} %d
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} %d
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} %g
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="1000"} 1.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 3.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.3
vllm:time_to_first_token_seconds_count{model_name="m"} 3.0
`, running, waiting, kv)
}
