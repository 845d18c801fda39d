package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ShortTokens is the answer length of the second pass bench proxy makes with a reference proxy:
// the CPU time per request at MaxTokens and at ShortTokens tokens splits a proxy's cost into a
// part per relayed token and a part per request.
const ShortTokens = 20

// ProxyCost is what one proxy (the router, or the reference nginx) cost and added in a bench
// proxy run, per concurrency ("c10", "c40", …).
type ProxyCost struct {
	// CPUMsPerRequest is the user+system CPU time of the proxy's whole process tree (the router
	// and its plugin processes; nginx's master and workers) while the streamed requests went
	// through it, divided by their number. Absent where /proc is not readable.
	CPUMsPerRequest map[string]float64 `json:"cpu_ms_per_request,omitempty"`
	// ShortCPUMsPerRequest is the same for the same requests answered in ShortTokens tokens
	// (with a reference proxy and MaxTokens above ShortTokens only).
	ShortCPUMsPerRequest map[string]float64 `json:"short_cpu_ms_per_request,omitempty"`
	// CPUUsPerToken is the CPU time per relayed token, in µs: (CPUMsPerRequest −
	// ShortCPUMsPerRequest) / (MaxTokens − ShortTokens). FixedCPUMsPerRequest is the rest of a
	// request's: CPUMsPerRequest − MaxTokens × CPUUsPerToken.
	CPUUsPerToken        map[string]float64 `json:"cpu_us_per_token,omitempty"`
	FixedCPUMsPerRequest map[string]float64 `json:"fixed_cpu_ms_per_request,omitempty"`
	// TTFTUs are the TTFT percentiles of the streamed requests through the proxy.
	TTFTUs map[string]Percentiles `json:"ttft_us"`
	// AddedTTFTPairedUs are the percentiles of the per-request differences: request n's TTFT
	// through the proxy minus the TTFT of request n (the same body) sent straight to a server,
	// over the requests that succeeded both ways.
	AddedTTFTPairedUs map[string]Percentiles `json:"added_ttft_paired_us"`
	// Errors counts the streamed requests through the proxy that failed.
	Errors map[string]int64 `json:"errors"`
}

// newProxyCost returns an empty ProxyCost.
func newProxyCost() *ProxyCost {
	return &ProxyCost{CPUMsPerRequest: map[string]float64{}, ShortCPUMsPerRequest: map[string]float64{},
		CPUUsPerToken: map[string]float64{}, FixedCPUMsPerRequest: map[string]float64{},
		TTFTUs: map[string]Percentiles{}, AddedTTFTPairedUs: map[string]Percentiles{}, Errors: map[string]int64{}}
}

// proxyUnderTest is one proxy bench proxy sends streams through: its API's host:port and the
// pid at the root of its process tree.
type proxyUnderTest struct {
	name string
	addr string
	pid  int
}

// record stores, under k, the TTFTs and failures of the requests through the proxy (indexed by
// request, zero where one failed; direct likewise), the percentiles of their paired differences
// against direct, and the CPU time its tree used (cpu) over their number.
func (pc *ProxyCost) record(k string, via, direct []time.Duration, failed int64, cpu meter) {
	pc.TTFTUs[k] = percentiles(succeeded(via))
	pc.AddedTTFTPairedUs[k] = pairedAdded(direct, via)
	pc.Errors[k] = failed
	if d, ok := cpu.used(); ok && len(via) > 0 {
		pc.CPUMsPerRequest[k] = float64(d) / float64(time.Millisecond) / float64(len(via))
	}
}

// shortPass sends the requests again through p with answers of ShortTokens tokens (shortBodies)
// and splits p's CPU time per request into a part per token and a fixed part, under k; nothing
// where /proc is not readable.
func (pc *ProxyCost) shortPass(ctx context.Context, client *http.Client, k string, p proxyUnderTest, shortBodies func(int) string, c, per, maxTokens int) {
	cpu := newTreeCPUMeter(p.pid)
	_, _ = streams(ctx, client, []string{p.addr}, shortBodies, c, per)
	d, ok := cpu.used()
	long, ok2 := pc.CPUMsPerRequest[k]
	if !ok || !ok2 {
		return
	}
	short := float64(d) / float64(time.Millisecond) / float64(c*per)
	pc.ShortCPUMsPerRequest[k] = short
	pc.CPUUsPerToken[k], pc.FixedCPUMsPerRequest[k] = splitCPU(long, short, maxTokens, ShortTokens)
}

// splitCPU splits the CPU ms per request at long tokens (longMs) and at short tokens (shortMs)
// into µs per token and the ms per request that remain at zero tokens.
func splitCPU(longMs, shortMs float64, long, short int) (usPerToken, fixedMs float64) {
	perToken := (longMs - shortMs) / float64(long-short) // ms
	return perToken * 1000, longMs - float64(long)*perToken
}

// pairedAdded returns the p50 and p99 of via[n] − direct[n] in µs, over the n where both
// succeeded (non-zero).
func pairedAdded(direct, via []time.Duration) Percentiles {
	var diffs []time.Duration
	for n := range min(len(direct), len(via)) {
		if direct[n] > 0 && via[n] > 0 {
			diffs = append(diffs, via[n]-direct[n])
		}
	}
	return percentiles(diffs)
}

// succeeded returns the non-zero TTFTs of ttfts: those of the requests that succeeded.
func succeeded(ttfts []time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(ttfts))
	for _, t := range ttfts {
		if t > 0 {
			out = append(out, t)
		}
	}
	return out
}

// writeCostTable prints the proxies side by side, one line per concurrency and proxy (the
// reference first) and one of the router's figures over the reference's; it returns the error
// of the last write.
func (r *ProxyResult) writeCostTable(out io.Writer) error {
	fmt.Fprintf(out, "per proxy: CPU of its whole process tree; µs/token and fixed ms/request from a second pass of %d-token answers;\n", r.ShortTokens)
	fmt.Fprintf(out, "added TTFT against the direct path, paired per request (µs)\n")
	fmt.Fprintf(out, "%7s  %-14s %14s %9s %16s %10s %10s\n", "streams", "proxy", "CPU ms/request", "µs/token", "fixed ms/request", "added p50", "added p99")
	ref, router := r.Proxies[r.Reference], r.Proxies["router"]
	var err error
	for _, c := range strings.Split(r.streams, ",") {
		c = strings.TrimSpace(c)
		k := "c" + c
		for _, name := range []string{r.Reference, "router"} {
			p := r.Proxies[name]
			fmt.Fprintf(out, "%7s  %-14s %14.2f %9.1f %16.2f %10.0f %10.0f\n", c, name, p.CPUMsPerRequest[k], p.CPUUsPerToken[k],
				p.FixedCPUMsPerRequest[k], p.AddedTTFTPairedUs[k].P50, p.AddedTTFTPairedUs[k].P99)
		}
		_, err = fmt.Fprintf(out, "%7s  %-14s %14s %9s %16s %10s %10s\n", c, "router/"+r.Reference,
			ratio(router.CPUMsPerRequest[k], ref.CPUMsPerRequest[k]), ratio(router.CPUUsPerToken[k], ref.CPUUsPerToken[k]),
			ratio(router.FixedCPUMsPerRequest[k], ref.FixedCPUMsPerRequest[k]),
			ratio(router.AddedTTFTPairedUs[k].P50, ref.AddedTTFTPairedUs[k].P50), ratio(router.AddedTTFTPairedUs[k].P99, ref.AddedTTFTPairedUs[k].P99))
	}
	return err
}

// ratio formats a/b as "2.4x", or "-" where b is not positive (no figure, or a reference that
// added nothing).
func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// warmCaches sends each of the first n requests of bodies to every server in addrs (c clients
// per server, the servers at once), so that the servers' prefix caches hold every prompt before
// the measured passes: the direct pass, the reference's and the router's then all find the same
// cache, and the TTFT each proxy adds is not a cold prefill the direct pass paid and the later
// passes did not (or a cache miss where a proxy picked another server than the direct pass).
func warmCaches(ctx context.Context, client *http.Client, addrs []string, bodies func(int) string, n, c int) {
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = streams(ctx, client, []string{a}, bodies, c, (n+c-1)/c)
		}()
	}
	wg.Wait()
}
