package bench

import (
	"bufio"
	"context"
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
	"github.com/foresight-router/foresight/sim/testbed"
)

// ProxyOptions are what RunProxy measures: bench proxy's flags.
type ProxyOptions struct {
	// Config is the router's config file (its endpoints and listeners are replaced).
	Config string
	// Streams are the comma-separated numbers of concurrent streams, e.g. "1,100,1000".
	Streams string
	// Servers is the number of emulated servers; Requests the least requests per concurrency and
	// mode (each client sends at least 2); RPSWorkers the clients of the max-rate phase (all at
	// least 1).
	Servers, Requests, RPSWorkers int
	// MaxTokens are the output tokens of each streamed request.
	MaxTokens int
	// RPSFor is the length of the max-rate phase, positive.
	RPSFor time.Duration
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
	// AddedTTFTUs is, per concurrency ("c1", "c100", …), the routed TTFT's percentile minus the
	// direct TTFT's (the same requests, the same fleet, one after the other): the difference of
	// the percentiles, not a percentile of paired differences.
	AddedTTFTUs map[string]Percentiles `json:"added_ttft_us"`
	DirectUs    map[string]Percentiles `json:"direct_ttft_us"`
	RoutedUs    map[string]Percentiles `json:"routed_ttft_us"`
	Errors      map[string]int64       `json:"errors"`
	// MaxRPS is the rate of one-token, non-streamed requests the router completed with
	// RPSWorkers clients sending back to back.
	MaxRPS float64 `json:"max_rps"`
	// streams is ProxyOptions.Streams as given: the text's lines, in order.
	streams string
}

// RunProxy starts o.Servers emulated vLLM servers and the router of o.Config in front of them
// (sim/testbed). For each concurrency in o.Streams it runs that many clients sending streamed
// completions of o.MaxTokens tokens one after another (at least o.Requests in all, and 2 per
// client), first straight to the servers (round-robin) and then through the router, and
// measures the TTFT percentiles of both and their difference. Then it measures the highest rate
// of one-token requests the router completes (o.RPSWorkers clients back to back for o.RPSFor).
// It stops the servers and the router before it returns.
func RunProxy(ctx context.Context, o ProxyOptions) (*ProxyResult, error) {
	levels, err := parseLevels(o.Streams)
	if err != nil {
		return nil, err
	}
	if o.Servers < 1 || o.Requests < 1 || o.RPSWorkers < 1 || o.RPSFor <= 0 {
		return nil, fmt.Errorf("--servers, --requests and --rps-workers must be at least 1, --rps-for positive")
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return nil, err
	}
	tb, err := testbed.Start(ctx, cfg, testbed.Options{Servers: o.Servers, Seed: 1}) // the router logs nothing
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	maxConc := 0
	for _, c := range levels {
		maxConc = max(maxConc, c)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxConc + 64, MaxIdleConns: 4*maxConc + 256}}
	defer client.CloseIdleConnections()
	res := &ProxyResult{Config: o.Config, Servers: o.Servers, AddedTTFTUs: map[string]Percentiles{},
		DirectUs: map[string]Percentiles{}, RoutedUs: map[string]Percentiles{}, Errors: map[string]int64{}, streams: o.Streams}
	direct := tb.Fleet.Addrs()
	routed := []string{tb.Router.Addr()}
	for _, c := range levels {
		k := "c" + strconv.Itoa(c)
		per := max(2, (o.Requests+c-1)/c)
		d, derr := streams(ctx, client, direct, c, per, o.MaxTokens)
		rt, rerr := streams(ctx, client, routed, c, per, o.MaxTokens)
		res.Errors[k] = derr + rerr
		res.DirectUs[k], res.RoutedUs[k] = percentiles(d), percentiles(rt)
		res.AddedTTFTUs[k] = Percentiles{res.RoutedUs[k].P50 - res.DirectUs[k].P50, res.RoutedUs[k].P99 - res.DirectUs[k].P99}
	}
	res.MaxRPS = maxRate(ctx, client, tb.Router.Addr(), o.RPSWorkers, o.RPSFor)
	return res, nil
}

// WriteText prints the result as bench proxy's text, one line per concurrency of the options'
// Streams, in their order.
func (r *ProxyResult) WriteText(out io.Writer) error {
	fmt.Fprintf(out, "%s on %d emulated servers\n", r.Config, r.Servers)
	for _, c := range strings.Split(r.streams, ",") {
		k := "c" + strings.TrimSpace(c)
		fmt.Fprintf(out, "%5s streams: TTFT direct p50 %.0f p99 %.0f µs, routed p50 %.0f p99 %.0f µs, added p50 %.0f p99 %.0f µs, errors %d\n",
			strings.TrimPrefix(k, "c"), r.DirectUs[k].P50, r.DirectUs[k].P99, r.RoutedUs[k].P50, r.RoutedUs[k].P99,
			r.AddedTTFTUs[k].P50, r.AddedTTFTUs[k].P99, r.Errors[k])
	}
	_, err := fmt.Fprintf(out, "max rate: %.0f requests/s\n", r.MaxRPS)
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

// streams runs c clients, each sending per streamed completions one after another to the
// addresses in turn, and returns every TTFT (time to the first event of the stream) and the
// number of failed requests.
func streams(ctx context.Context, client *http.Client, addrs []string, c, per, maxTokens int) ([]time.Duration, int64) {
	var (
		mu     sync.Mutex
		ttfts  = make([]time.Duration, 0, c*per)
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				n := w*per + i
				ttft, err := oneStream(ctx, client, addrs[n%len(addrs)], n, maxTokens)
				if err != nil {
					failed.Add(1)
					continue
				}
				mu.Lock()
				ttfts = append(ttfts, ttft)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ttfts, failed.Load()
}

// oneStream sends a streamed completion of maxTokens tokens and returns the time to its first
// event, after reading the whole stream.
func oneStream(ctx context.Context, client *http.Client, addr string, n, maxTokens int) (time.Duration, error) {
	body := fmt.Sprintf(`{"model":%q,"prompt":"bench request %d","max_tokens":%d,"stream":true}`, emulator.DefaultModel, n, maxTokens)
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
// and returns the completed requests per second.
func maxRate(ctx context.Context, client *http.Client, addr string, workers int, d time.Duration) float64 {
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
	return float64(done.Load()) / time.Since(began).Seconds()
}
