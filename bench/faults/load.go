package faults

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/foresight-router/foresight/bench/chaos"
	"github.com/foresight-router/foresight/bench/openloop"
	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/loadgen"
)

// load sends the open-loop load and records every request's outcome.
type load struct {
	url      string
	client   *http.Client
	baseline time.Duration
	sent     int

	mu       sync.Mutex
	outcomes []requestOutcome
}

// requestOutcome is one request: when it was due, its TTFT when it succeeded, else why it failed.
type requestOutcome struct {
	at     time.Duration
	ttft   time.Duration
	reason string // "" when it succeeded
}

// newLoad returns the load of the router at base; baseline is the length of its first window.
func newLoad(base string, baseline time.Duration) *load {
	return &load{url: base + "/v1/completions", baseline: baseline,
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}}}
}

// run sends one request at each arrival time from began (late ones at once), open loop; an
// arrival finding maxInFlight requests in flight fails without being sent. It returns once every
// request has ended.
func (l *load) run(ctx context.Context, began time.Time, arrivals []time.Duration) {
	l.sent = openloop.Run(ctx, began, arrivals, maxInFlight, func(ctx context.Context, n int) {
		ttft, reason := l.one(ctx, n)
		l.record(requestOutcome{at: arrivals[n], ttft: ttft, reason: reason})
	}, func(n int, reason string) {
		l.record(requestOutcome{at: arrivals[n], reason: reason})
	})
}

func (l *load) record(o requestOutcome) {
	l.mu.Lock()
	l.outcomes = append(l.outcomes, o)
	l.mu.Unlock()
}

// one sends request n and reads its stream to the end: the TTFT, or the reason it failed.
func (l *load) one(ctx context.Context, n int) (time.Duration, string) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	body := fmt.Sprintf(`{"model":%q,"prompt":"fault bench request %d","max_tokens":%d,"stream":true}`,
		emulator.DefaultModel, n, maxTokens)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, strings.NewReader(body))
	if err != nil {
		return 0, "building the request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-llm-d-slo-ttft-ms", strconv.Itoa(sloTTFTMs))
	began := time.Now()
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, "transport: " + openloop.TransportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Sprintf("status %d: %s", resp.StatusCode, openloop.ErrorMessage(snippet))
	}
	var res loadgen.Result
	if err := loadgen.ReadStream(resp.Body, began, &res); err != nil {
		return 0, "the stream: " + openloop.Clip(err.Error(), 200)
	}
	if res.TTFT == 0 {
		return 0, "the stream carried no text before data: [DONE]"
	}
	return res.TTFT, ""
}

// result summarizes the outcomes by window: those due before baseline, and the others; span is
// the whole load's length.
func (l *load) result(baseline, span time.Duration) *Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.SortFunc(l.outcomes, func(a, b requestOutcome) int { return cmp.Compare(a.at, b.at) })
	res := &Result{Requests: len(l.outcomes), Failures: map[string]int{}, RestartMs: []float64{}, Faults: []chaos.Event{}}
	var base, faults []float64 // TTFTs in µs
	for _, o := range l.outcomes {
		inBase := o.at < baseline
		if inBase {
			res.RequestsBaseline++
		} else {
			res.RequestsDuringFaults++
		}
		if o.reason != "" {
			res.Failed++
			res.Failures[o.reason]++
			if inBase {
				res.FailedBaseline++
			} else {
				res.FailedDuringFaults++
			}
			if len(res.FailureSamples) < failureSamples {
				res.FailureSamples = append(res.FailureSamples, FailureSample{AtMs: ms(o.at), Reason: o.reason})
			}
			continue
		}
		us := float64(o.ttft.Nanoseconds()) / 1000
		if inBase {
			base = append(base, us)
		} else {
			faults = append(faults, us)
		}
	}
	slices.Sort(base)
	slices.Sort(faults)
	res.P50TTFTBaselineMs, res.P99TTFTBaselineMs = msAt(base, 0.5), msAt(base, 0.99)
	res.P50TTFTFaultsMs, res.P99TTFTFaultsMs = msAt(faults, 0.5), msAt(faults, 0.99)
	if span > 0 {
		res.RateAchieved = math.Round(float64(l.sent)/span.Seconds()*10) / 10
	}
	return res
}

// msAt returns the q-quantile (internal/quantile) of sorted TTFTs in µs, in milliseconds rounded
// to the microsecond; 0 for none.
func msAt(sortedUs []float64, q float64) float64 {
	return math.Round(quantile.Sorted(sortedUs, q)) / 1000
}
