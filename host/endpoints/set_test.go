package endpoints

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestScrapeFillsState(t *testing.T) {
	f, ts := newFakeEngine(t, vllmBody(4, 2, 0.25))
	f.set(func(f *fakeEngine) { f.models = []string{"m-b", "m-a", "m-b"} })
	s, err := New(fastConfig(), []Endpoint{{ID: "e0", Address: ts.URL, Labels: map[string]string{"role": "decode"}}})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Get("e0"); !st.Healthy || !st.ScrapedAt.IsZero() || st.MetricsAge != 0 || st.Models != nil {
		t.Errorf("before Run: %+v, want healthy, never scraped, no models", st)
	}
	run(t, s)
	waitFor(t, "a scrape and the models", func() bool {
		st, _ := s.Get("e0")
		return !st.ScrapedAt.IsZero() && st.Models != nil
	})
	st, ok := s.Get("e0")
	want := State{
		Endpoint: Endpoint{ID: "e0", Address: ts.URL, Labels: map[string]string{"role": "decode"}},
		Healthy:  true, Waiting: 4, Running: 2, KVCacheUsage: 0.25, BlockSize: 16, NumGPUBlocks: 1000,
		Models: []string{"m-a", "m-b"},
	}
	if !ok || st.ID != want.ID || st.Labels["role"] != "decode" || st.Healthy != want.Healthy ||
		st.Waiting != want.Waiting || st.Running != want.Running || st.KVCacheUsage != want.KVCacheUsage ||
		st.BlockSize != want.BlockSize || st.NumGPUBlocks != want.NumGPUBlocks ||
		!slices.Equal(st.Models, want.Models) || st.Failures != 0 || st.LastError != "" {
		t.Errorf("state = %+v\nwant    %+v", st, want)
	}
	if got := s.Models(); !slices.Equal(got, []string{"m-a", "m-b"}) {
		t.Errorf("Models() = %v", got)
	}
	// The gauges follow the engine.
	f.set(func(f *fakeEngine) { f.metrics = vllmBody(9, 8, 0.75) })
	waitFor(t, "the new gauges", func() bool {
		st, _ := s.Get("e0")
		return st.Waiting == 9 && st.Running == 8 && st.KVCacheUsage == 0.75
	})
}

func TestSGLangNames(t *testing.T) {
	_, ts := newFakeEngine(t, "# TYPE sglang:num_queue_reqs gauge\n"+
		"sglang:num_queue_reqs{model_name=\"m\",tp_rank=\"0\"} 3.0\n"+
		"sglang:num_running_reqs{model_name=\"m\",tp_rank=\"0\"} 5.0\n"+
		"sglang:token_usage{model_name=\"m\",tp_rank=\"0\"} 0.28\n")
	cfg := fastConfig()
	cfg.Names, _ = Names("sglang")
	s, err := New(cfg, []Endpoint{{ID: "sg", Address: addr(ts)}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	waitFor(t, "a scrape", func() bool { st, _ := s.Get("sg"); return !st.ScrapedAt.IsZero() })
	st, _ := s.Get("sg")
	if st.Waiting != 3 || st.Running != 5 || st.KVCacheUsage != 0.28 || st.BlockSize != 0 || st.NumGPUBlocks != 0 || !st.Healthy {
		t.Errorf("state = %+v", st)
	}
}

func TestFailuresAndRecovery(t *testing.T) {
	tests := []struct {
		name    string
		break_  func(f *fakeEngine)
		wantErr string
	}{
		{"status 500", func(f *fakeEngine) { f.metricsStatus = http.StatusInternalServerError }, "status 500 Internal Server Error"},
		{"a required metric missing", func(f *fakeEngine) {
			f.metrics = strings.ReplaceAll(f.metrics, "vllm:num_requests_running", "vllm:other")
		}, `/metrics: metric "vllm:num_requests_running" missing`},
		{"a body over the bound", func(f *fakeEngine) {
			f.metrics = vllmBody(1, 1, 0) + strings.Repeat("# padding\n", MaxBodyBytes/10+1)
		}, "body larger than 4194304 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ts := newFakeEngine(t, vllmBody(1, 2, 0.5))
			s, err := New(fastConfig(), []Endpoint{{ID: "e", Address: addr(ts)}})
			if err != nil {
				t.Fatal(err)
			}
			run(t, s)
			waitFor(t, "a first scrape", func() bool { st, _ := s.Get("e"); return !st.ScrapedAt.IsZero() })

			good := f.metrics
			_, probesBefore := f.count() // none: an endpoint in the rotation is scraped, not probed
			f.set(tt.break_)
			waitFor(t, "the endpoint to leave the rotation", func() bool { st, _ := s.Get("e"); return !st.Healthy })
			st, _ := s.Get("e")
			if st.Failures < 3 || !strings.Contains(st.LastError, tt.wantErr) {
				t.Errorf("out of the rotation with %d failures, last error %q; want at least 3 and one containing %q",
					st.Failures, st.LastError, tt.wantErr)
			}
			if got := s.Models(); got != nil {
				t.Errorf("Models() with the only endpoint out = %v, want none", got)
			}
			if st.Waiting != 1 || st.Running != 2 {
				t.Errorf("the last good gauges were lost: %+v", st)
			}

			f.set(func(f *fakeEngine) { f.metricsStatus, f.metrics = http.StatusOK, good })
			waitFor(t, "the endpoint to come back", func() bool { st, _ := s.Get("e"); return st.Healthy })
			st, _ = s.Get("e")
			if st.Failures != 0 || st.LastError != "" {
				t.Errorf("back with %d failures, last error %q", st.Failures, st.LastError)
			}
			if _, probes := f.count(); probes <= probesBefore {
				t.Errorf("came back without a /health probe (%d probes before, %d after)", probesBefore, probes)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	a := addr(ts)
	ts.Close() // nothing listens there any more
	cfg := fastConfig()
	cfg.FailAfter = 2
	s, err := New(cfg, []Endpoint{{ID: "gone", Address: a}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	waitFor(t, "the endpoint to leave the rotation", func() bool { st, _ := s.Get("gone"); return !st.Healthy })
	st, _ := s.Get("gone")
	if !strings.Contains(st.LastError, "connection refused") || st.Failures < 2 || !st.ScrapedAt.IsZero() {
		t.Errorf("state = %+v, want a refused connection after at least 2 failures", st)
	}
	// Probes keep failing and say so.
	waitFor(t, "a failed probe", func() bool { st, _ := s.Get("gone"); return strings.HasPrefix(st.LastError, "probing: ") })
}

func TestReportFailureAndSuccess(t *testing.T) {
	f, ts := newFakeEngine(t, vllmBody(0, 0, 0))
	s, err := New(Config{FailAfter: 3, ProbeInterval: 20 * time.Millisecond, Interval: 5 * time.Millisecond},
		[]Endpoint{{ID: "e", Address: addr(ts)}})
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("dial tcp: connection refused")
	steps := []struct {
		name         string
		do           func()
		wantFailures int
		wantHealthy  bool
		wantError    string
	}{
		{"one failure", func() { s.ReportFailure("e", refused) }, 1, true, "proxy: dial tcp: connection refused"},
		{"a success resets the count", func() { s.ReportSuccess("e") }, 0, true, ""},
		{"second", func() { s.ReportFailure("e", refused) }, 1, true, "proxy: dial tcp: connection refused"},
		{"third", func() { s.ReportFailure("e", nil) }, 2, true, "proxy: the request failed"},
		{"FailAfter reached", func() { s.ReportFailure("e", refused) }, 3, false, "proxy: dial tcp: connection refused"},
		{"a success does not bring it back", func() { s.ReportSuccess("e") }, 0, false, ""},
		{"unknown ids are ignored", func() { s.ReportFailure("nobody", refused); s.ReportSuccess("nobody") }, 0, false, ""},
	}
	for _, st := range steps {
		st.do()
		got, _ := s.Get("e")
		if got.Failures != st.wantFailures || got.Healthy != st.wantHealthy || got.LastError != st.wantError {
			t.Errorf("%s: failures %d, healthy %v, last error %q; want %d, %v, %q",
				st.name, got.Failures, got.Healthy, got.LastError, st.wantFailures, st.wantHealthy, st.wantError)
		}
	}
	// Out of the rotation, the endpoint is probed rather than scraped, and comes back.
	run(t, s)
	waitFor(t, "a probe to bring the endpoint back", func() bool { st, _ := s.Get("e"); return st.Healthy })
	if _, probes := f.count(); probes == 0 {
		t.Error("back in the rotation without a probe")
	}
}

func TestMetricsAge(t *testing.T) {
	_, ts := newFakeEngine(t, vllmBody(1, 1, 0.1))
	var now atomic.Int64 // unix nanoseconds
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now.Store(t0.UnixNano())
	cfg := fastConfig()
	cfg.Now = func() time.Time { return time.Unix(0, now.Load()).UTC() }
	s, err := New(cfg, []Endpoint{{ID: "e", Address: addr(ts)}})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, s)
	waitFor(t, "a scrape", func() bool { st, _ := s.Get("e"); return !st.ScrapedAt.IsZero() })
	stop() // no more scrapes: the clock alone moves the age
	now.Store(t0.Add(1500 * time.Millisecond).UnixNano())
	st, _ := s.Get("e")
	if !st.ScrapedAt.Equal(t0) || st.MetricsAge != 1500*time.Millisecond {
		t.Errorf("scraped at %v, age %v; want %v, 1.5s", st.ScrapedAt, st.MetricsAge, t0)
	}
	if snap := s.Snapshot(); len(snap) != 1 || snap[0].MetricsAge != 1500*time.Millisecond {
		t.Errorf("snapshot = %+v", snap)
	}
}

func TestUpdate(t *testing.T) {
	_, tsA := newFakeEngine(t, vllmBody(1, 0, 0))
	_, tsB := newFakeEngine(t, vllmBody(2, 0, 0))
	fC, tsC := newFakeEngine(t, vllmBody(3, 0, 0))
	fC.set(func(f *fakeEngine) { f.models = []string{"c-model"} })
	s, err := New(fastConfig(), []Endpoint{{ID: "a", Address: addr(tsA)}, {ID: "b", Address: addr(tsB)}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	scraped := func(id string) func() bool {
		return func() bool { st, ok := s.Get(id); return ok && !st.ScrapedAt.IsZero() }
	}
	waitFor(t, "a scraped", scraped("a"))
	waitFor(t, "b scraped", scraped("b"))
	s.ReportFailure("a", errors.New("once")) // state to keep

	if err := s.Update([]Endpoint{
		{ID: "c", Address: addr(tsC)},
		{ID: "a", Address: addr(tsA), Labels: map[string]string{"pool": "x"}},
		{ID: "b2", Address: "127.0.0.1:notaport"},
	}); err == nil || !strings.Contains(err.Error(), `endpoint "b2"`) {
		t.Fatalf("Update with a bad address: error %v, want one naming b2", err)
	}
	if got := ids(s.Snapshot()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("a failed Update changed the list to %v", got)
	}

	if err := s.Update([]Endpoint{
		{ID: "c", Address: addr(tsC)},
		{ID: "a", Address: addr(tsA), Labels: map[string]string{"pool": "x"}},
	}); err != nil {
		t.Fatal(err)
	}
	if got := ids(s.Snapshot()); !slices.Equal(got, []string{"c", "a"}) {
		t.Errorf("after Update the list is %v, want [c a]", got)
	}
	a, _ := s.Get("a")
	if a.ScrapedAt.IsZero() || a.Labels["pool"] != "x" {
		t.Errorf("a lost its state or kept its old labels: %+v", a)
	}
	if _, ok := s.Get("b"); ok {
		t.Error("b is still there")
	}
	waitFor(t, "c scraped", scraped("c"))
	waitFor(t, "c's models", func() bool { return slices.Contains(s.Models(), "c-model") })

	// An id whose address changes is a new endpoint.
	if err := s.Update([]Endpoint{{ID: "a", Address: addr(tsB)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a scraped at its new address", func() bool { st, _ := s.Get("a"); return st.Waiting == 2 })
}

func ids(states []State) []string {
	var out []string
	for _, st := range states {
		out = append(out, st.ID)
	}
	return out
}

// TestRunStopsItsGoroutines runs a set through failures, updates and a stop, and checks that
// every goroutine it started ended.
func TestRunStopsItsGoroutines(t *testing.T) {
	f, ts := newFakeEngine(t, vllmBody(1, 1, 0.1))
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := addr(dead)
	dead.Close()
	cfg := fastConfig()
	before := runtime.NumGoroutine()

	s, err := New(cfg, []Endpoint{{ID: "ok", Address: addr(ts)}, {ID: "dead", Address: deadAddr}})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, s)
	waitFor(t, "ok scraped", func() bool { st, _ := s.Get("ok"); return !st.ScrapedAt.IsZero() })
	waitFor(t, "dead out of the rotation", func() bool { st, _ := s.Get("dead"); return !st.Healthy })
	f.set(func(f *fakeEngine) { f.metricsStatus = http.StatusBadGateway })
	if err := s.Update([]Endpoint{{ID: "ok", Address: addr(ts)}, {ID: "new", Address: addr(ts)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "new scraped", func() bool { st, _ := s.Get("new"); return st.Failures > 0 })
	stop()

	// Run again after a stop: the loops start again.
	f.set(func(f *fakeEngine) { f.metricsStatus = http.StatusOK })
	stop = run(t, s)
	waitFor(t, "scrapes after a restart", func() bool { st, _ := s.Get("new"); return !st.ScrapedAt.IsZero() })
	stop()

	s.Config().Client.CloseIdleConnections()
	checkGoroutines(t, before)
}

func TestOutOfRotation(t *testing.T) {
	for _, tt := range []struct {
		healthy, ejected bool
		want             string
	}{
		{true, false, ""},
		{false, false, "unhealthy"},
		{true, true, "ejected"},
		{false, true, "unhealthy"}, // the stronger word: it does not even answer
	} {
		st := State{Healthy: tt.healthy, Ejected: tt.ejected}
		if got := st.OutOfRotation(); got != tt.want || (got == "") != st.Routable() {
			t.Errorf("healthy %v, ejected %v: %q (routable %v), want %q", tt.healthy, tt.ejected, got, st.Routable(), tt.want)
		}
	}
}
