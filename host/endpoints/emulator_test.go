package endpoints

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/emulator"
)

// TestEmulatorFleet scrapes the project's vLLM emulator: two servers, one of them busy with a
// long request.
func TestEmulatorFleet(t *testing.T) {
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	addrs := fleet.Addrs()
	s, err := New(Config{Interval: 10 * time.Millisecond},
		[]Endpoint{{ID: "vllm-0", Address: addrs[0]}, {ID: "vllm-1", Address: "http://" + addrs[1] + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	waitFor(t, "every endpoint scraped, with its models", func() bool {
		for _, st := range s.Snapshot() {
			if st.ScrapedAt.IsZero() || st.Models == nil {
				return false
			}
		}
		return true
	})
	for _, st := range s.Snapshot() {
		if !st.Healthy || st.BlockSize != 16 || st.NumGPUBlocks <= 0 || st.Failures != 0 || st.LastError != "" ||
			!slices.Equal(st.Models, []string{emulator.DefaultModel}) || st.MetricsAge > 5*time.Second {
			t.Errorf("%s: %+v", st.ID, st)
		}
	}
	if got := s.Models(); !slices.Equal(got, []string{emulator.DefaultModel}) {
		t.Errorf("Models() = %v", got)
	}

	// A request of a few hundred tokens keeps vllm-1 busy for seconds: its gauges show it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addrs[1]+"/v1/completions",
			strings.NewReader(`{"prompt":"tell me a long story","max_tokens":500,"stream":true}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	waitFor(t, "vllm-1 to show its running request", func() bool {
		st, _ := s.Get("vllm-1")
		return st.Running+st.Waiting >= 1 && st.KVCacheUsage > 0
	})
	if st, _ := s.Get("vllm-0"); st.Running != 0 || st.Waiting != 0 || st.KVCacheUsage != 0 {
		t.Errorf("vllm-0 is idle, yet %+v", st)
	}
}
