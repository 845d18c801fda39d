package soak

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/foresight-router/foresight/bench/chaos"
	"github.com/foresight-router/foresight/bench/openloop"
	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/internal/promtext"
)

// The router's metrics the soak reads (host/metrics, and client_golang's Go and process
// collectors, which the router registers).
const (
	metricRequests   = "foresight_requests_total"
	metricGoroutines = "go_goroutines"
	metricCPU        = "process_cpu_seconds_total"
	metricPrefix     = "foresight_endpoint_prefix_index_blocks"
)

// mb is a megabyte, 10^6 bytes: the unit of every RSS the soak reports.
const mb = 1e6

// Sample is one reading of the router and its plugins; a value that could not be read is 0
// (and left out of the JSON).
type Sample struct {
	// AtMin is when it was taken, in minutes from the start of the load.
	AtMin float64 `json:"at_min"`
	// RouterRSSMB is the router's VmRSS in MB, RouterGoroutines its go_goroutines, RouterFDs its
	// open file descriptors (its connections among them).
	RouterRSSMB      float64 `json:"router_rss_mb,omitempty"`
	RouterGoroutines float64 `json:"router_goroutines,omitempty"`
	RouterFDs        float64 `json:"router_fds,omitempty"`
	// RouterPrefixBlocks is the blocks the router's prefix index holds, over every endpoint: the
	// memory the router keeps by design, up to its bound.
	RouterPrefixBlocks float64 `json:"router_prefix_blocks,omitempty"`
	// PluginsRSSMB is the plugin processes' VmRSS summed, in MB, and PluginRSSMBByType the same
	// by plugin type: 0 and empty while a plugin is down (being restarted).
	PluginsRSSMB      float64            `json:"plugins_rss_mb,omitempty"`
	PluginRSSMBByType map[string]float64 `json:"plugin_rss_mb_by_type,omitempty"`
}

// sampler reads the router's RSS, goroutines and descriptors and its plugins' RSS every period,
// until finish.
type sampler struct {
	pid   int
	adm   *chaos.Admin
	began time.Time

	mu      sync.Mutex
	samples []Sample
	stop    context.CancelFunc
	done    chan struct{}
}

// startSampler takes a first sample at once, then one every period.
func startSampler(ctx context.Context, pid int, adm *chaos.Admin, began time.Time, period time.Duration) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	sm := &sampler{pid: pid, adm: adm, began: began, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(sm.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			sm.take(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return sm
}

// finish stops the sampling, takes a last sample and returns them all, in time order.
func (sm *sampler) finish(ctx context.Context) []Sample {
	sm.stop()
	<-sm.done
	sm.take(ctx)
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.samples
}

// take reads one sample.
func (sm *sampler) take(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	s := Sample{AtMin: time.Since(sm.began).Minutes()}
	if rss, err := processRSS(sm.pid); err == nil {
		s.RouterRSSMB = rss / mb
	}
	if fds, err := os.ReadDir("/proc/" + strconv.Itoa(sm.pid) + "/fd"); err == nil {
		s.RouterFDs = float64(len(fds))
	}
	if fams, err := scrape(ctx, sm.adm); err == nil {
		s.RouterGoroutines, _ = fams.Sum(metricGoroutines)
		s.RouterPrefixBlocks, _ = fams.Sum(metricPrefix)
	}
	if d, err := sm.adm.Pipeline(ctx); err == nil {
		if byType, ok := pluginRSS(d); ok {
			s.PluginRSSMBByType = map[string]float64{}
			for typ, v := range byType {
				s.PluginRSSMBByType[typ] = v / mb
				s.PluginsRSSMB += v / mb
			}
		}
	}
	sm.mu.Lock()
	sm.samples = append(sm.samples, s)
	sm.mu.Unlock()
}

// pluginRSS returns the RSS in bytes of the plugin processes d lists, summed by plugin type (a
// process serving several instances counts once, under its first plugin's type); false when a
// plugin launched from a binary is down or its RSS cannot be read.
func pluginRSS(d admin.Description) (map[string]float64, bool) {
	out := map[string]float64{}
	seen := map[int]bool{}
	for _, p := range d.Plugins {
		if p.Builtin {
			continue
		}
		if !p.Up || p.PID <= 0 {
			return nil, false
		}
		if seen[p.PID] {
			continue
		}
		seen[p.PID] = true
		rss, err := processRSS(p.PID)
		if err != nil {
			return nil, false
		}
		out[p.Type] += rss
	}
	return out, true
}

// processRSS returns a process's resident set size in bytes: VmRSS in /proc/<pid>/status (Linux).
func processRSS(pid int) (float64, error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	return parseVmRSS(status)
}

// parseVmRSS reads the VmRSS line of a /proc/<pid>/status, "VmRSS:   12345 kB", in bytes.
func parseVmRSS(status []byte) (float64, error) {
	for line := range strings.SplitSeq(string(status), "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			break
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS line in kB in the process's status")
}

// scrape reads the router's metrics from its admin listener.
func scrape(ctx context.Context, adm *chaos.Admin) (promtext.Families, error) {
	status, body, err := adm.Do(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: status %d: %s", status, openloop.ErrorMessage(body))
	}
	return promtext.Parse(bytes.NewReader(body))
}
