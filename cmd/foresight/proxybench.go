package main

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
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/testbed"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// proxyOptions are bench proxy's flags.
type proxyOptions struct {
	config, streams, cpuProfile   string
	servers, requests, rpsWorkers int
	maxTokens                     int
	rpsFor                        time.Duration
	asJSON                        bool
}

// percentiles are a latency distribution's p50 and p99, in µs.
type percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// proxyResult is the JSON bench proxy prints.
type proxyResult struct {
	Config  string `json:"config"`
	Servers int    `json:"servers"`
	// AddedTTFTUs is, per concurrency ("c1", "c100", …), the routed TTFT's percentile minus the
	// direct TTFT's (the same requests, the same fleet, one after the other): the difference of
	// the percentiles, not a percentile of paired differences.
	AddedTTFTUs map[string]percentiles `json:"added_ttft_us"`
	DirectUs    map[string]percentiles `json:"direct_ttft_us"`
	RoutedUs    map[string]percentiles `json:"routed_ttft_us"`
	Errors      map[string]int64       `json:"errors"`
	// MaxRPS is the rate of one-token, non-streamed requests the router completed with
	// rpsWorkers clients sending back to back.
	MaxRPS float64 `json:"max_rps"`
}

func newBenchProxy() *cobra.Command {
	var o proxyOptions
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Measure the TTFT the router adds over going straight to the emulated servers",
		Long: "bench proxy starts --servers emulated vLLM servers and the router of --config in front of them.\n" +
			"For each concurrency in --streams it runs that many clients sending streamed completions of\n" +
			"--max-tokens tokens one after another (at least --requests in all, and 2 per client), first\n" +
			"straight to the servers (round-robin) and then through the router, and reports the TTFT\n" +
			"percentiles of both and their difference. Then it\n" +
			"measures the highest rate of one-token requests the router completes (--rps-workers clients\n" +
			"back to back for --rps-for).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.OutOrStdout(), o.cpuProfile, o.asJSON,
				func() (*proxyResult, error) { return benchProxy(cmd.Context(), o) },
				func(out io.Writer, res *proxyResult) error { return printProxy(out, res, o.streams) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "examples/pipeline.yaml", "the router's configuration (its endpoints and listeners are replaced)")
	f.IntVar(&o.servers, "servers", 4, "emulated servers")
	f.StringVar(&o.streams, "streams", "1,100,1000", "comma-separated numbers of concurrent streams")
	f.IntVar(&o.maxTokens, "max-tokens", 128, "output tokens of each streamed request: how long a stream lasts (~9 ms per token)")
	f.IntVar(&o.requests, "requests", 300, "least requests per concurrency and mode (each client sends at least 2)")
	f.IntVar(&o.rpsWorkers, "rps-workers", 64, "clients of the max-rate phase")
	f.DurationVar(&o.rpsFor, "rps-for", 5*time.Second, "length of the max-rate phase")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write the CPU profile of this process (router, emulated servers and clients) to this file")
	return cmd
}

// printProxy prints the proxy bench's result as text, one line per concurrency in streams.
func printProxy(out io.Writer, res *proxyResult, streams string) error {
	fmt.Fprintf(out, "%s on %d emulated servers\n", res.Config, res.Servers)
	for _, c := range strings.Split(streams, ",") {
		k := "c" + strings.TrimSpace(c)
		fmt.Fprintf(out, "%5s streams: TTFT direct p50 %.0f p99 %.0f µs, routed p50 %.0f p99 %.0f µs, added p50 %.0f p99 %.0f µs, errors %d\n",
			strings.TrimPrefix(k, "c"), res.DirectUs[k].P50, res.DirectUs[k].P99, res.RoutedUs[k].P50, res.RoutedUs[k].P99,
			res.AddedTTFTUs[k].P50, res.AddedTTFTUs[k].P99, res.Errors[k])
	}
	_, err := fmt.Fprintf(out, "max rate: %.0f requests/s\n", res.MaxRPS)
	return err
}

func benchProxy(ctx context.Context, o proxyOptions) (*proxyResult, error) {
	levels, err := parseLevels(o.streams)
	if err != nil {
		return nil, err
	}
	if o.servers < 1 || o.requests < 1 || o.rpsWorkers < 1 || o.rpsFor <= 0 {
		return nil, fmt.Errorf("--servers, --requests and --rps-workers must be at least 1, --rps-for positive")
	}
	cfg, err := config.Load(o.config)
	if err != nil {
		return nil, err
	}
	tb, err := testbed.Start(ctx, cfg, testbed.Options{Servers: o.servers, Seed: 1, Log: zerolog.Nop()})
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	fleet, r := tb.Fleet, tb.Router
	maxConc := 0
	for _, c := range levels {
		maxConc = max(maxConc, c)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxConc + 64, MaxIdleConns: 4*maxConc + 256}}
	defer client.CloseIdleConnections()
	res := &proxyResult{Config: o.config, Servers: o.servers, AddedTTFTUs: map[string]percentiles{},
		DirectUs: map[string]percentiles{}, RoutedUs: map[string]percentiles{}, Errors: map[string]int64{}}
	direct := fleet.Addrs()
	routed := []string{r.Addr()}
	for _, c := range levels {
		k := "c" + strconv.Itoa(c)
		per := max(2, (o.requests+c-1)/c)
		d, derr := streams(ctx, client, direct, c, per, o.maxTokens)
		rt, rerr := streams(ctx, client, routed, c, per, o.maxTokens)
		res.Errors[k] = derr + rerr
		res.DirectUs[k] = percentiles{pct(d, 0.5), pct(d, 0.99)}
		res.RoutedUs[k] = percentiles{pct(rt, 0.5), pct(rt, 0.99)}
		res.AddedTTFTUs[k] = percentiles{res.RoutedUs[k].P50 - res.DirectUs[k].P50, res.RoutedUs[k].P99 - res.DirectUs[k].P99}
	}
	res.MaxRPS = maxRate(ctx, client, r.Addr(), o.rpsWorkers, o.rpsFor)
	return res, nil
}

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
