package soak

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/foresight-router/foresight/bench/chaos"
	"github.com/foresight-router/foresight/internal/quantile"
)

// Result is what Run found; its JSON is bench soak's.
type Result struct {
	Config  string  `json:"config"`
	Servers int     `json:"servers"`
	Rate    float64 `json:"rate"`
	Seed    uint64  `json:"seed"`
	// DurationSeconds is the load's length, WarmupSeconds the part of it left out of the slopes,
	// SampleEverySeconds the time between two samples.
	DurationSeconds    float64 `json:"duration_s"`
	WarmupSeconds      float64 `json:"warmup_s"`
	SampleEverySeconds float64 `json:"sample_every_s"`
	// RateAchieved is the requests sent per second of load.
	RateAchieved float64 `json:"rate_achieved"`

	// Requests were due; Sent were sent, the others Skipped (the in-flight bound, or the bench
	// stopped). OK got a complete, correct answer; Shed an answer of the router's flow control
	// with its reason (ShedByReason); Cut a stream the router ended with an error event (by the
	// event's code, CutByCode), as it must when a server broke the stream off after its first
	// event; Lost got none (no HTTP status); Wrong got one that was none of these (another
	// status, a broken or incomplete stream, an incomplete answer). SilentTruncations, counted
	// in Wrong too, are the streams that ended without data: [DONE] and without an error event.
	Requests          int            `json:"requests"`
	Sent              int            `json:"sent"`
	Skipped           int            `json:"skipped"`
	OK                int            `json:"ok"`
	Shed              int            `json:"shed"`
	ShedByReason      map[string]int `json:"shed_by_reason,omitempty"`
	Cut               int            `json:"cut"`
	CutByCode         map[string]int `json:"cut_by_code,omitempty"`
	Lost              int            `json:"lost"`
	Wrong             int            `json:"wrong"`
	SilentTruncations int            `json:"silent_truncations"`
	// Streamed and Whole count the requests sent of each kind; Chat those to
	// /v1/chat/completions (the others to /v1/completions).
	Streamed int `json:"streamed"`
	Whole    int `json:"whole"`
	Chat     int `json:"chat"`
	// ByStatus counts the sent requests by the HTTP status they got ("none" for the lost).
	ByStatus map[string]int `json:"by_status"`
	// TTFT percentiles (internal/quantile) of the correct streamed answers, and the answer time
	// of the correct whole ones, from the client's side.
	TTFTP50Ms  float64 `json:"ttft_p50_ms"`
	TTFTP99Ms  float64 `json:"ttft_p99_ms"`
	WholeP50Ms float64 `json:"whole_p50_ms"`
	WholeP99Ms float64 `json:"whole_p99_ms"`
	// Failures lists every lost, wrong or skipped request, in the order they were due.
	Failures []Failure `json:"failures"`
	// Truncated is what the truncator in front of the first server cut (nil without one):
	// each stream it cut after its first event must reach the client as a Cut one.
	Truncated *chaos.TruncatedCounts `json:"truncated,omitempty"`

	// Kills and Swaps count the faults performed as intended (chaos.Tally), KillFailures and
	// SwapFailures the others; MaxRestartMs is the longest restart of a killed plugin.
	Kills        int     `json:"kills"`
	KillFailures int     `json:"kill_failures"`
	Swaps        int     `json:"swaps"`
	SwapFailures int     `json:"swap_failures"`
	MaxRestartMs float64 `json:"max_restart_ms"`
	// Stops count the plugin processes frozen (SIGSTOP) that the router killed and served again
	// with a new pid, StopFailures the others; MaxRecoverMs is the longest time from a SIGSTOP
	// to the plugin serving again (the router's hang detection, its kill and the restart).
	Stops        int           `json:"stops"`
	StopFailures int           `json:"stop_failures"`
	MaxRecoverMs float64       `json:"max_recover_ms"`
	Faults       []chaos.Event `json:"faults"`
	// Drain is how the requests in flight at the router's SIGTERM ended (nil without them).
	Drain *DrainResult `json:"drain,omitempty"`

	// RouterPID is the router process's id; RouterRSSMB its VmRSS in MB (10^6 bytes),
	// RouterGoroutines its go_goroutines and RouterFDs its open file descriptors, sampled
	// through the load.
	RouterPID        int   `json:"router_pid"`
	RouterRSSMB      Trend `json:"router_rss_mb"`
	RouterGoroutines Trend `json:"router_goroutines"`
	RouterFDs        Trend `json:"router_fds"`
	// RouterPrefixBlocks is the blocks its prefix index holds (foresight_endpoint_prefix_index_blocks
	// summed): the RSS it grows into by design, bounded per endpoint.
	RouterPrefixBlocks Trend `json:"router_prefix_blocks"`
	// RouterCPUMsPerRequest is the router process's CPU time over the load (its
	// process_cpu_seconds_total, utime + stime) per request sent; 0 where not exposed.
	RouterCPUMsPerRequest float64 `json:"router_cpu_ms_per_request"`
	// PluginsRSSMB is the plugin processes' RSS summed, in MB; PluginRSSMBByType the same by
	// plugin type. A sample is left out while a plugin is down.
	PluginsRSSMB      Trend            `json:"plugins_rss_mb"`
	PluginRSSMBByType map[string]Trend `json:"plugin_rss_mb_by_type"`
	// Samples are the readings the trends were drawn from.
	Samples []Sample `json:"samples"`
	// Accounting is the router's count of the requests against the load's.
	Accounting Accounting `json:"accounting"`

	// Pass is the verdict: nothing lost, wrong or skipped, every fault performed, every request
	// accounted for. Problems says what failed it.
	Pass        bool     `json:"pass"`
	Problems    []string `json:"problems"`
	WallSeconds float64  `json:"wall_s"`
}

// Failure is one request without a correct answer.
type Failure struct {
	ID   string  `json:"id"` // its x-request-id
	AtMs float64 `json:"at_ms"`
	// Kind is lost, wrong or skipped; Status the HTTP status it got (0 for none).
	Kind   string `json:"kind"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error"`
}

// result summarizes the outcomes of the sent requests over span, the load's length.
func (l *load) result(sent int, span time.Duration) *Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.SortFunc(l.outcomes, func(a, b outcome) int { return cmp.Compare(a.n, b.n) })
	res := &Result{Requests: len(l.outcomes), Sent: sent, ByStatus: map[string]int{}, Failures: []Failure{},
		Faults: []chaos.Event{}, PluginRSSMBByType: map[string]Trend{}, Samples: []Sample{}}
	var ttfts, wholes []float64 // ms
	for _, o := range l.outcomes {
		if o.skipped {
			res.Skipped++
			res.Failures = append(res.Failures, failure(o, "skipped"))
			continue
		}
		res.count(o)
		switch {
		case o.status == 0:
			res.Lost++
			res.Failures = append(res.Failures, failure(o, "lost"))
		case o.dropped != "":
			res.Shed++
			res.ShedByReason = increment(res.ShedByReason, o.dropped)
		case o.problem != "":
			res.Wrong++
			if o.silent {
				res.SilentTruncations++
			}
			res.Failures = append(res.Failures, failure(o, "wrong"))
		case o.cut != "":
			res.Cut++
			res.CutByCode = increment(res.CutByCode, o.cut)
		case o.stream:
			res.OK++
			ttfts = append(ttfts, msOf(o.ttft))
		default:
			res.OK++
			wholes = append(wholes, msOf(o.e2e))
		}
	}
	slices.Sort(ttfts)
	slices.Sort(wholes)
	res.TTFTP50Ms, res.TTFTP99Ms = round3(quantile.Sorted(ttfts, 0.5)), round3(quantile.Sorted(ttfts, 0.99))
	res.WholeP50Ms, res.WholeP99Ms = round3(quantile.Sorted(wholes, 0.5)), round3(quantile.Sorted(wholes, 0.99))
	if span > 0 {
		res.RateAchieved = math.Round(float64(sent)/span.Seconds()*10) / 10
	}
	return res
}

// increment adds one to m[key], making m when it is nil, and returns m.
func increment(m map[string]int, key string) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[key]++
	return m
}

// count counts a sent request by kind and status.
func (r *Result) count(o outcome) {
	if o.stream {
		r.Streamed++
	} else {
		r.Whole++
	}
	if o.chat {
		r.Chat++
	}
	status := "none"
	if o.status != 0 {
		status = strconv.Itoa(o.status)
	}
	r.ByStatus[status]++
}

func failure(o outcome, kind string) Failure {
	return Failure{ID: o.id, AtMs: msOf(o.at), Kind: kind, Status: o.status, Error: o.problem}
}

// msOf is d in milliseconds, to the microsecond.
func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// faults records the faults as performed, the kills' restart times and the stops' recoveries.
func (r *Result) faults(events []chaos.Event, restartMs, recoverMs []float64) {
	t := chaos.Count(events)
	r.Kills, r.KillFailures, r.Swaps, r.SwapFailures = t.Kills, t.KillFailures, t.Swaps, t.SwapFailures
	r.Stops, r.StopFailures = t.Stops, t.StopFailures
	r.Faults = append([]chaos.Event{}, events...)
	r.MaxRestartMs = slices.Max(append([]float64{0}, restartMs...))
	r.MaxRecoverMs = slices.Max(append([]float64{0}, recoverMs...))
}

// trends keeps the samples and summarizes them, fitting the slopes after warmup.
func (r *Result) trends(samples []Sample, warmup time.Duration) {
	w := warmup.Minutes()
	r.Samples = append([]Sample{}, samples...)
	r.RouterRSSMB = trend(seriesOf(samples, func(s Sample) float64 { return s.RouterRSSMB }), w)
	r.RouterGoroutines = trend(seriesOf(samples, func(s Sample) float64 { return s.RouterGoroutines }), w)
	r.RouterFDs = trend(seriesOf(samples, func(s Sample) float64 { return s.RouterFDs }), w)
	r.RouterPrefixBlocks = trend(seriesOf(samples, func(s Sample) float64 { return s.RouterPrefixBlocks }), w)
	r.PluginsRSSMB = trend(seriesOf(samples, func(s Sample) float64 { return s.PluginsRSSMB }), w)
	types := map[string]bool{}
	for _, s := range samples {
		for typ := range s.PluginRSSMBByType {
			types[typ] = true
		}
	}
	for typ := range types {
		r.PluginRSSMBByType[typ] = trend(seriesOf(samples, func(s Sample) float64 { return s.PluginRSSMBByType[typ] }), w)
	}
}

// verdict sets Pass and Problems.
func (r *Result) verdict() {
	var p []string
	add := func(n int, format string) {
		if n > 0 {
			p = append(p, fmt.Sprintf(format, n))
		}
	}
	add(r.Lost, "%d requests lost")
	add(r.Wrong, "%d requests answered wrong")
	add(r.Skipped, "%d requests not sent")
	add(r.SilentTruncations, "%d streams truncated silently (no data: [DONE], no error event)")
	add(r.KillFailures, "%d kills failed")
	add(r.SwapFailures, "%d swaps failed")
	add(r.StopFailures, "%d frozen plugins not killed and restarted")
	var cutAfter int
	if r.Truncated != nil {
		cutAfter = int(r.Truncated.CutAfterFirst)
	}
	if r.Cut != cutAfter {
		p = append(p, fmt.Sprintf("%d streams reached the client cut with an error event; the servers cut %d after their first event", r.Cut, cutAfter))
	}
	if r.Drain != nil {
		p = append(p, r.Drain.problems()...)
	}
	a := r.Accounting
	if a.Counted != a.Sent {
		p = append(p, fmt.Sprintf("the router counted %d requests in %s, the load sent %d", a.Counted, metricRequests, a.Sent))
	}
	if a.CountedFailed != a.ClientFailed {
		p = append(p, fmt.Sprintf("the router counted %d failed requests, the load saw %d", a.CountedFailed, a.ClientFailed))
	}
	r.Problems, r.Pass = append([]string{}, p...), len(p) == 0
}

// WriteText prints the result as bench soak's text: the figures, then every request without a
// correct answer and every fault that failed, then the verdict.
func (r *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s on %d emulated servers: %.0f requests/s for %v (%.1f/s sent), seed %d\n",
		r.Config, r.Servers, r.Rate, time.Duration(r.DurationSeconds*float64(time.Second)), r.RateAchieved, r.Seed)
	fmt.Fprintf(w, "requests: %d sent, %d ok, %d shed with a reason, %d cut with an error event, %d lost, %d wrong (%d truncated silently), %d not sent; %d streamed, %d whole, %d chat; by status:",
		r.Sent, r.OK, r.Shed, r.Cut, r.Lost, r.Wrong, r.SilentTruncations, r.Skipped, r.Streamed, r.Whole, r.Chat)
	for _, k := range slices.Sorted(maps.Keys(r.ByStatus)) {
		fmt.Fprintf(w, " %s %d", k, r.ByStatus[k])
	}
	writeCounts(w, "; shed by reason:", r.ShedByReason)
	writeCounts(w, "; cut by code:", r.CutByCode)
	if t := r.Truncated; t != nil {
		fmt.Fprintf(w, "\ntruncator in front of the first server: %d streams relayed, %d cut before their first event, %d after",
			t.Streams, t.CutBeforeFirst, t.CutAfterFirst)
	}
	fmt.Fprintf(w, "\nTTFT of streams p50 %.1f p99 %.1f ms; whole answers p50 %.1f p99 %.1f ms\n",
		r.TTFTP50Ms, r.TTFTP99Ms, r.WholeP50Ms, r.WholeP99Ms)
	fmt.Fprintf(w, "faults: %d kills (%d failed, max restart %.1f ms), %d swaps (%d failed), %d stops (%d failed, max recovery %.1f ms)\n",
		r.Kills, r.KillFailures, r.MaxRestartMs, r.Swaps, r.SwapFailures, r.Stops, r.StopFailures, r.MaxRecoverMs)
	fmt.Fprintf(w, "router (pid %d): RSS %s; CPU %.3f ms per request\n", r.RouterPID, r.RouterRSSMB.text(" MB", 1), r.RouterCPUMsPerRequest)
	fmt.Fprintf(w, "  goroutines %s\n  descriptors %s\n  prefix index blocks %s\n", r.RouterGoroutines.text("", 0), r.RouterFDs.text("", 0),
		r.RouterPrefixBlocks.text("", 0))
	fmt.Fprintf(w, "plugins: RSS %s\n", r.PluginsRSSMB.text(" MB", 1))
	for _, typ := range slices.Sorted(maps.Keys(r.PluginRSSMBByType)) {
		fmt.Fprintf(w, "  %s: %s\n", typ, r.PluginRSSMBByType[typ].text(" MB", 1))
	}
	fmt.Fprintf(w, "slopes fitted after a %v warm-up, samples every %v\n",
		time.Duration(r.WarmupSeconds*float64(time.Second)), time.Duration(r.SampleEverySeconds*float64(time.Second)))
	a := r.Accounting
	fmt.Fprintf(w, "metrics: %s counted %d of %d sent; failures counted %d, seen by the client %d",
		metricRequests, a.Counted, a.Sent, a.CountedFailed, a.ClientFailed)
	writeCounts(w, "; by code:", a.ByCode)
	fmt.Fprintln(w)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  %s %s at %.0f ms: %s\n", f.Kind, f.ID, f.AtMs, f.Error)
	}
	for _, ev := range r.Faults {
		if !ev.OK {
			fmt.Fprintf(w, "  failed %s at %.0f ms: %s\n", ev.Kind, ev.AtMs, ev.Detail)
		}
	}
	if r.Drain != nil {
		r.Drain.writeText(w)
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL: " + strings.Join(r.Problems, "; ")
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n", verdict)
	return err
}

// writeCounts prints m after label, key by key in order, when it holds any.
func writeCounts(w io.Writer, label string, m map[string]int) {
	if len(m) == 0 {
		return
	}
	fmt.Fprint(w, label)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(w, " %s %d", k, m[k])
	}
}

// text is the trend as bench soak's text shows it, its values with digits decimals and unit:
// start → end (max), the slope per minute after the warm-up.
func (t Trend) text(unit string, digits int) string {
	v := func(x float64) string { return strconv.FormatFloat(x, 'f', digits, 64) }
	return fmt.Sprintf("%s → %s%s (max %s), slope %+.3f%s/min over %d samples", v(t.Start), v(t.End), unit, v(t.Max),
		t.SlopePerMin, unit, t.Fitted)
}
