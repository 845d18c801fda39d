package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/foresight-router/foresight/sim/workload"
)

// ProxyOptions are what RunProxy measures: bench proxy's flags.
type ProxyOptions struct {
	// Config is the router's config file (its endpoints and listeners are replaced).
	Config string
	// Binary is the foresight binary whose serve command runs Config (the command passes its own).
	Binary string
	// Streams are the comma-separated numbers of concurrent streams, e.g. "1,100,1000".
	Streams string
	// Servers is the number of emulated servers; Requests the least requests per concurrency and
	// mode (each client sends at least 2); RPSWorkers the clients of the max-rate phase (all at
	// least 1).
	Servers, Requests, RPSWorkers int
	// MaxTokens are the output tokens of each streamed request.
	MaxTokens int
	// Trace, when set, gives the streamed requests their prompts: the prompt lengths of its rows
	// in order (an Azure 2023 CSV, or Mooncake's JSONL when it ends in .jsonl), rendered as
	// sim/loadgen renders them. Without it every prompt is a few words.
	Trace string
	// RPSFor is the length of the max-rate phase, positive.
	RPSFor time.Duration
	// RouterCPUProfile, when set, is where the router writes its CPU profile (serve --cpuprofile).
	RouterCPUProfile string
	// Reference, when set, is a proxy measured beside the router in front of the same servers:
	// ReferenceNginx (the nginx on PATH or in /usr/sbin) is the one accepted.
	Reference string
}

// Percentiles are a latency distribution's p50 and p99, in µs.
type Percentiles struct {
	// P50 and P99 are internal/quantile's estimates.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// ProxyResult is what RunProxy measured; its JSON is bench proxy's.
type ProxyResult struct {
	Config  string `json:"config"`
	Servers int    `json:"servers"`
	// PromptTokens is the mean prompt length of the streamed requests, in the emulator's tokens.
	PromptTokens float64 `json:"prompt_tokens"`
	// AddedTTFTUs is, per concurrency ("c1", "c100", …), the routed TTFT's percentile minus the
	// direct TTFT's (the same requests, the same fleet, one after the other): the difference of
	// the percentiles, not a percentile of paired differences.
	AddedTTFTUs map[string]Percentiles `json:"added_ttft_us"`
	DirectUs    map[string]Percentiles `json:"direct_ttft_us"`
	RoutedUs    map[string]Percentiles `json:"routed_ttft_us"`
	Errors      map[string]int64       `json:"errors"`
	// RouterCPUMsPerRequest is, per concurrency and for the max-rate phase ("rps"), the router
	// process's user+system CPU time while the routed requests ran, divided by their number.
	// Absent where /proc is not readable.
	RouterCPUMsPerRequest map[string]float64 `json:"router_cpu_ms_per_request,omitempty"`
	// MaxRPS is the rate of one-token, non-streamed requests the router completed with
	// RPSWorkers clients sending back to back.
	MaxRPS float64 `json:"max_rps"`
	// MaxTokens is the answer length of the streamed requests; ShortTokens that of the second
	// pass with a reference proxy (0 without one).
	MaxTokens   int `json:"max_tokens"`
	ShortTokens int `json:"short_tokens,omitempty"`
	// Proxies is, by name ("router", and the reference's, e.g. "nginx"), what each proxy cost
	// per request (its whole process tree) and the TTFT it added, paired per request.
	Proxies map[string]*ProxyCost `json:"proxies"`
	// Reference is ProxyOptions.Reference.
	Reference string `json:"reference,omitempty"`
	// streams is ProxyOptions.Streams as given: the text's lines, in order.
	streams string
}

// RunProxy starts o.Servers emulated vLLM servers (sim/emulator) and the router of o.Config in
// front of them, as its own `foresight serve` process. For each concurrency in o.Streams it runs
// that many clients sending streamed completions of o.MaxTokens tokens one after another (at
// least o.Requests in all, and 2 per client), first straight to the servers (round-robin) and
// then through the router, and measures the TTFT percentiles of both, their difference, the
// differences paired per request and the router's CPU time per routed request. With
// o.Reference, every prompt is first sent to every server (one-token answers), so that all the
// passes find the same prefix caches; then the reference proxy (nginx) in front of the same
// servers gets the same requests between the direct ones and the router's, and both proxies get
// them again answered in ShortTokens tokens, which splits each one's CPU time into a part per
// token and one per request. Then it measures the highest rate of one-token requests
// the router completes (o.RPSWorkers clients back to back for o.RPSFor). It stops the servers
// and the router before it returns.
func RunProxy(ctx context.Context, o ProxyOptions) (*ProxyResult, error) {
	levels, err := parseLevels(o.Streams)
	if err != nil {
		return nil, err
	}
	if o.Servers < 1 || o.Requests < 1 || o.RPSWorkers < 1 || o.RPSFor <= 0 {
		return nil, fmt.Errorf("--servers, --requests and --rps-workers must be at least 1, --rps-for positive")
	}
	if o.Binary == "" {
		return nil, fmt.Errorf("the foresight binary to run the router is not known")
	}
	if _, err := config.Load(o.Config); err != nil {
		return nil, err
	}
	var nginxBin string
	switch o.Reference {
	case "":
	case ReferenceNginx:
		if nginxBin, err = FindNginx(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("--reference: %q is not a reference proxy bench proxy runs; accepted: %s", o.Reference, ReferenceNginx)
	}
	most := 0 // requests in the longest phase
	for _, c := range levels {
		most = max(most, c*max(2, (o.Requests+c-1)/c))
	}
	bodies, promptTokens, err := streamBodies(o.Trace, most, o.MaxTokens)
	if err != nil {
		return nil, err
	}
	fleet, err := emulator.Start(o.Servers, 0, testbed.DefaultPreset, 1)
	if err != nil {
		return nil, err
	}
	defer fleet.Close()
	var args []string
	if o.RouterCPUProfile != "" {
		args = []string{"--cpuprofile", o.RouterCPUProfile}
	}
	proc, err := StartRouter(ctx, o.Binary, o.Config, fleet.Addrs(), append(args, "--log-level", "error"),
		emulator.DefaultModel, DefaultLiveReadyTimeout)
	if err != nil {
		return nil, err
	}
	defer proc.Stop(DefaultLiveStopGrace)
	router := proxyUnderTest{name: "router", addr: proc.api, pid: proc.pid}
	var reference *proxyUnderTest
	if nginxBin != "" {
		n, err := startNginx(ctx, nginxBin, fleet.Addrs(), emulator.DefaultModel, DefaultLiveReadyTimeout)
		if err != nil {
			return nil, err
		}
		defer n.Stop(DefaultLiveStopGrace)
		reference = &proxyUnderTest{name: ReferenceNginx, addr: n.api, pid: n.pid}
	}
	var shortBodies func(int) string
	if reference != nil && o.MaxTokens > ShortTokens {
		if shortBodies, _, err = streamBodies(o.Trace, most, ShortTokens); err != nil {
			return nil, err
		}
	}
	maxConc := 0
	for _, c := range levels {
		maxConc = max(maxConc, c)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxConc + 64, MaxIdleConns: 4*maxConc + 256}}
	defer client.CloseIdleConnections()
	res := &ProxyResult{Config: o.Config, Servers: o.Servers, AddedTTFTUs: map[string]Percentiles{},
		DirectUs: map[string]Percentiles{}, RoutedUs: map[string]Percentiles{}, Errors: map[string]int64{},
		RouterCPUMsPerRequest: map[string]float64{}, PromptTokens: promptTokens, streams: o.Streams,
		MaxTokens: o.MaxTokens, Proxies: map[string]*ProxyCost{router.name: newProxyCost()}, Reference: o.Reference}
	if reference != nil {
		res.Proxies[reference.name] = newProxyCost()
	}
	if shortBodies != nil {
		res.ShortTokens = ShortTokens
	}
	direct := fleet.Addrs()
	routed := []string{proc.api}
	if reference != nil {
		warm, _, err := streamBodies(o.Trace, most, 1)
		if err != nil {
			return nil, err
		}
		warmCaches(ctx, client, direct, warm, most, maxConc)
	}
	for _, c := range levels {
		k := "c" + strconv.Itoa(c)
		per := max(2, (o.Requests+c-1)/c)
		d, derr := streams(ctx, client, direct, bodies, c, per)
		if reference != nil {
			tree := newTreeCPUMeter(reference.pid)
			ref, failed := streams(ctx, client, []string{reference.addr}, bodies, c, per)
			res.Proxies[reference.name].record(k, ref, d, failed, tree)
		}
		cpu, tree := newCPUMeter(proc.pid), newTreeCPUMeter(proc.pid)
		rt, rerr := streams(ctx, client, routed, bodies, c, per)
		res.cpuPerRequest(k, cpu, c*per)
		res.Proxies[router.name].record(k, rt, d, rerr, tree)
		res.Errors[k] = derr + rerr
		res.DirectUs[k], res.RoutedUs[k] = percentiles(succeeded(d)), percentiles(succeeded(rt))
		res.AddedTTFTUs[k] = Percentiles{res.RoutedUs[k].P50 - res.DirectUs[k].P50, res.RoutedUs[k].P99 - res.DirectUs[k].P99}
		if shortBodies != nil {
			for _, p := range []proxyUnderTest{*reference, router} {
				res.Proxies[p.name].shortPass(ctx, client, k, p, shortBodies, c, per, o.MaxTokens)
			}
		}
	}
	cpu := newCPUMeter(proc.pid)
	var done int64
	res.MaxRPS, done = maxRate(ctx, client, proc.api, o.RPSWorkers, o.RPSFor)
	res.cpuPerRequest("rps", cpu, int(done))
	return res, nil
}

// cpuPerRequest records the router's CPU time since cpu's reading per request under key k.
func (r *ProxyResult) cpuPerRequest(k string, cpu *cpuMeter, requests int) {
	if d, ok := cpu.used(); ok && requests > 0 {
		r.RouterCPUMsPerRequest[k] = float64(d) / float64(time.Millisecond) / float64(requests)
	}
}

// streamBodies returns the function giving request n's body, a streamed completion of maxTokens
// tokens, and the mean prompt length in tokens. Without a trace every prompt is a few words of
// its own; with one, request n's prompt is that of row n mod k, for the first k = min(requests,
// maxTracePrompts) rows, rendered as sim/loadgen renders them.
func streamBodies(trace string, requests, maxTokens int) (func(n int) string, float64, error) {
	body := func(prompt string) string {
		b, _ := json.Marshal(prompt) // a string always encodes
		return fmt.Sprintf(`{"model":%q,"prompt":%s,"max_tokens":%d,"stream":true}`, emulator.DefaultModel, b, maxTokens)
	}
	if trace == "" {
		prompt := func(n int) string { return "bench request " + strconv.Itoa(n) }
		return func(n int) string { return body(prompt(n)) }, float64(len(strings.Fields(prompt(0)))), nil
	}
	scenario := "azure-conv"
	if strings.HasSuffix(trace, ".jsonl") {
		scenario = "mooncake"
	}
	w, err := workload.Scenario(scenario, workload.Params{TracePath: trace, Requests: min(requests, maxTracePrompts), Seed: 1})
	if err != nil {
		return nil, 0, fmt.Errorf("--trace: %w", err)
	}
	bodies := make([]string, len(w.Requests))
	tokens := 0
	for i := range w.Requests {
		bodies[i] = body(loadgen.Prompt(&w.Requests[i]))
		tokens += w.Requests[i].InputTokens
	}
	return func(n int) string { return bodies[n%len(bodies)] }, float64(tokens) / float64(len(bodies)), nil
}

// maxTracePrompts bounds the prompts taken from a trace; requests beyond it reuse them in turn.
const maxTracePrompts = 2000

// WriteText prints the result as bench proxy's text, one line per concurrency of the options'
// Streams, in their order; with a reference proxy, then the proxies side by side.
func (r *ProxyResult) WriteText(out io.Writer) error {
	fmt.Fprintf(out, "%s on %d emulated servers, prompts of %.0f tokens on average\n", r.Config, r.Servers, r.PromptTokens)
	for _, c := range strings.Split(r.streams, ",") {
		k := "c" + strings.TrimSpace(c)
		fmt.Fprintf(out, "%5s streams: TTFT direct p50 %.0f p99 %.0f µs, routed p50 %.0f p99 %.0f µs, added p50 %.0f p99 %.0f µs, errors %d\n",
			strings.TrimPrefix(k, "c"), r.DirectUs[k].P50, r.DirectUs[k].P99, r.RoutedUs[k].P50, r.RoutedUs[k].P99,
			r.AddedTTFTUs[k].P50, r.AddedTTFTUs[k].P99, r.Errors[k])
	}
	if cpu := r.RouterCPUMsPerRequest; len(cpu) > 0 {
		fmt.Fprintf(out, "router CPU per routed request (ms):")
		for _, c := range strings.Split(r.streams, ",") {
			fmt.Fprintf(out, " %s streams %.3f,", strings.TrimSpace(c), cpu["c"+strings.TrimSpace(c)])
		}
		fmt.Fprintf(out, " max-rate phase %.3f\n", cpu["rps"])
	}
	_, err := fmt.Fprintf(out, "max rate: %.0f requests/s\n", r.MaxRPS)
	if err == nil && r.Reference != "" {
		err = r.writeCostTable(out)
	}
	return err
}

// percentiles reads the p50 and p99 of lat in µs.
func percentiles(lat []time.Duration) Percentiles {
	us := sortedMicros(lat)
	return Percentiles{quantile.Sorted(us, 0.50), quantile.Sorted(us, 0.99)}
}

// parseLevels reads the comma-separated concurrencies of --streams.
func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--streams: %q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// streams runs c clients, each sending per streamed completions (bodies) one after another to
// the addresses in turn, and returns the TTFT (time to the first event of the stream) of each
// request n (client w's i-th is n = w·per + i), zero where it failed, and the number that failed.
func streams(ctx context.Context, client *http.Client, addrs []string, bodies func(int) string, c, per int) ([]time.Duration, int64) {
	var (
		ttfts  = make([]time.Duration, c*per) // each client writes its own elements
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				n := w*per + i
				ttft, err := oneStream(ctx, client, addrs[n%len(addrs)], bodies(n))
				if err != nil {
					failed.Add(1)
					continue
				}
				ttfts[n] = max(ttft, 1) // a success is never zero
			}
		}()
	}
	wg.Wait()
	return ttfts, failed.Load()
}

// oneStream sends a streamed completion and returns the time to its first event, after reading
// the whole stream.
func oneStream(ctx context.Context, client *http.Client, addr, body string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, "data: {") {
			ttft := time.Since(began)
			_, _ = io.Copy(io.Discard, br)
			return ttft, nil
		}
		if err != nil {
			return 0, fmt.Errorf("the stream ended before its first event: %w", err)
		}
	}
}

// maxRate runs workers clients sending one-token non-streamed completions back to back for d
// and returns the completed requests per second and their number.
func maxRate(ctx context.Context, client *http.Client, addr string, workers int, d time.Duration) (float64, int64) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var done atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				body := fmt.Sprintf(`{"model":%q,"prompt":"rate %d %d","max_tokens":1}`, emulator.DefaultModel, w, i)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(began).Seconds(), done.Load()
}
