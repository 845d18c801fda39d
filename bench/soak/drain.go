package soak

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/foresight-router/foresight/bench"
)

const (
	// MaxDrain bounds Options.Drain.
	MaxDrain = 256
	// drainLongTokens is what the drain's long requests ask for: MaxMaxTokens, longer than any
	// shutdown grace the emulated servers stream within (about 30 s at their pace).
	drainLongTokens = MaxMaxTokens
	// drainShortTokens is what its short streams ask for: done well within a grace.
	drainShortTokens = 64
	// drainMargin is how long past the router's grace the bench waits for it to exit before it
	// kills it: the grace's end, the error events, the plugins' stop.
	drainMargin = 10 * time.Second
	// drainStartWithin bounds the wait for the drain's streams to reach their first event.
	drainStartWithin = 30 * time.Second
	// wholeSettle is how long the drain's whole requests are given to reach the router
	// before the SIGTERM: they show nothing before their answer.
	wholeSettle = 200 * time.Millisecond
)

// DrainResult is how the requests in flight when the router was told to stop (SIGTERM) ended.
// The router drains them for its shutdown grace: each must end complete, or cut with the
// router's error event (a stream), or with an error status and an OpenAI error body (a whole
// answer); none silently cut, none without an answer.
type DrainResult struct {
	// GraceSeconds is the router's shutdown grace.
	GraceSeconds float64 `json:"grace_s"`
	// Streams were in flight at the SIGTERM (half long, half short), Whole the whole requests.
	Streams int `json:"streams"`
	Whole   int `json:"whole"`
	// Completed got a complete, correct answer; Cut a stream that ended with an error event
	// (CutByCode by its code); Refused a whole request answered with an error status and an
	// OpenAI error; Silent a stream that ended without data: [DONE] or an error event; Lost no
	// answer or a body that broke; Wrong any other answer.
	Completed int            `json:"completed"`
	Cut       int            `json:"cut"`
	CutByCode map[string]int `json:"cut_by_code,omitempty"`
	Refused   int            `json:"refused"`
	Silent    int            `json:"silent"`
	Lost      int            `json:"lost"`
	Wrong     int            `json:"wrong"`
	// ExitSeconds is the time from the SIGTERM until the router exited, ExitCode its status (-1:
	// the bench killed it, grace + 10 s having passed).
	ExitSeconds float64   `json:"exit_s"`
	ExitCode    int       `json:"exit_code"`
	Failures    []Failure `json:"failures"`
}

// drain sends n streams, half asking for drainLongTokens and half for drainShortTokens, and
// n/4 whole requests for drainLongTokens; once every stream has its first event it ends the
// router with SIGTERM and reads every answer to its end.
func drain(ctx context.Context, proc *bench.RouterProc, n int, seed uint64, grace time.Duration) *DrainResult {
	d := &DrainResult{GraceSeconds: grace.Seconds(), Streams: n, Whole: n / 4, Failures: []Failure{}}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, drainStartWithin+grace+drainMargin+requestTimeout)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started sync.WaitGroup
	)
	for i := range n + n/4 {
		c := newCall(seed+1, MaxRequests+i, 1) // ids past any of the load's
		c.id = fmt.Sprintf("soak-%d-drain-%d", seed, i)
		c.stream, c.maxTokens = i < n, drainLongTokens
		if c.stream && i%2 == 1 {
			c.maxTokens = drainShortTokens
		}
		if c.stream {
			started.Add(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind, problem, cut := drainCall(ctx, client, "http://"+proc.API(), c, &started)
			mu.Lock()
			defer mu.Unlock()
			d.count(c, kind, problem, cut)
		}()
	}
	waitOrCancel(ctx, &started, drainStartWithin)
	time.Sleep(wholeSettle)
	sigterm := time.Now()
	proc.Stop(grace + drainMargin)
	d.ExitSeconds = round3(time.Since(sigterm).Seconds())
	d.ExitCode, _ = proc.ExitCode()
	wg.Wait()
	return d
}

// The ways a drain request ends.
const (
	drainCompleted = "completed"
	drainCut       = "cut"
	drainRefused   = "refused"
	drainSilent    = "silent"
	drainLost      = "lost"
	drainWrong     = "wrong"
)

// drainCall sends c, marks started once a stream's headers arrived (the router sends them with
// the first event), and reads the answer to its end.
func drainCall(ctx context.Context, client *http.Client, base string, c call, started *sync.WaitGroup) (kind, problem, cut string) {
	once := sync.OnceFunc(func() {
		if c.stream {
			started.Done()
		}
	})
	defer once()
	req, err := newRequest(ctx, base, c)
	if err != nil {
		return drainLost, err.Error(), ""
	}
	resp, err := client.Do(req)
	once()
	if err != nil {
		return drainLost, "transport: " + err.Error(), ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if msg := errorMessage(body); msg != "" {
			return drainRefused, "", ""
		}
		return drainWrong, fmt.Sprintf("status %d without an OpenAI error: %.200s", resp.StatusCode, body), ""
	}
	if !c.stream {
		if p := checkWhole(resp.Body, c); p != "" {
			return drainLost, p, ""
		}
		return drainCompleted, "", ""
	}
	e := checkStream(resp.Body, c, time.Now())
	switch {
	case e.silent:
		return drainSilent, e.problem, ""
	case e.problem != "":
		return drainLost, e.problem, ""
	case e.cut != "":
		return drainCut, "", e.cut
	}
	return drainCompleted, "", ""
}

// count records one drain request's end.
func (d *DrainResult) count(c call, kind, problem, cut string) {
	switch kind {
	case drainCompleted:
		d.Completed++
	case drainCut:
		d.Cut++
		d.CutByCode = increment(d.CutByCode, cut)
	case drainRefused:
		d.Refused++
	case drainSilent:
		d.Silent++
	case drainLost:
		d.Lost++
	default:
		d.Wrong++
	}
	if problem != "" {
		d.Failures = append(d.Failures, Failure{ID: c.id, Kind: kind, Error: problem})
	}
}

// problems says what failed the drain.
func (d *DrainResult) problems() []string {
	var p []string
	if n := d.Silent + d.Lost + d.Wrong; n > 0 {
		p = append(p, fmt.Sprintf("at the SIGTERM %d requests in flight ended silently cut, without an answer or wrong", n))
	}
	if d.ExitCode < 0 {
		p = append(p, fmt.Sprintf("the router had not exited %v after its %v grace; the bench killed it", drainMargin, time.Duration(d.GraceSeconds*float64(time.Second))))
	}
	return p
}

// writeText prints the drain's line and its failures.
func (d *DrainResult) writeText(w io.Writer) {
	fmt.Fprintf(w, "SIGTERM with %d streams and %d whole requests in flight (grace %.1f s): %d completed, %d cut with an error event, %d refused with an error, %d silently cut, %d lost, %d wrong; exited in %.1f s with status %d\n",
		d.Streams, d.Whole, d.GraceSeconds, d.Completed, d.Cut, d.Refused, d.Silent, d.Lost, d.Wrong, d.ExitSeconds, d.ExitCode)
	for _, f := range d.Failures {
		fmt.Fprintf(w, "  %s %s: %s\n", f.Kind, f.ID, f.Error)
	}
}

// waitOrCancel waits for wg, within at most.
func waitOrCancel(ctx context.Context, wg *sync.WaitGroup, within time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(within):
	}
}
