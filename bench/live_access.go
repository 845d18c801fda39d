package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/stats"
)

// maxLogLine bounds a router output line accessLog holds while it waits for the line's end.
const maxLogLine = 64 << 10

// accessLog reads a router's output as it comes and keeps, per request ID, what its access line
// (serve's "request" lines at log level info) says: the endpoint, the TTFT and TPOT the router
// measured from its upstream, the predictions, and how long it held the request before
// dispatching it (total_ms − e2e_ms).
type accessLog struct {
	mu      sync.Mutex
	partial []byte
	lines   map[string]accessLine
}

// accessLine is what accessLog keeps of one request's access line: the TTFT and TPOT the router
// measured from its upstream (0: none), how long it held the request, the endpoint that served
// it (the last one tried) and the producer's prediction for it there (0: none valid).
type accessLine struct {
	ttftMs, tpotMs, heldMs float64
	endpoint               string
	predTTFTMs, predTPOTMs float64
}

func newAccessLog() *accessLog { return &accessLog{lines: map[string]accessLine{}} }

// Write takes the next piece of output; lines may come split over several writes.
func (a *accessLog) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		line, rest, complete := bytes.Cut(b, []byte{'\n'})
		if !complete {
			if len(a.partial)+len(line) <= maxLogLine {
				a.partial = append(a.partial, line...)
			} else {
				a.partial = a.partial[:0] // a line too long to be an access line: dropped
			}
			break
		}
		if len(a.partial) > 0 {
			line = append(a.partial, line...)
		}
		a.line(line)
		a.partial, b = a.partial[:0], rest
	}
	return n, nil
}

// line records an access line (accessLine) by its request ID; other lines are ignored.
func (a *accessLog) line(line []byte) {
	if !bytes.Contains(line, []byte(`"message":"request"`)) {
		return
	}
	var l struct {
		RequestID string  `json:"request_id"`
		Endpoint  string  `json:"endpoint"`
		TTFTMs    float64 `json:"ttft_ms"`
		TPOTMs    float64 `json:"tpot_ms"`
		TotalMs   float64 `json:"total_ms"`
		E2EMs     float64 `json:"e2e_ms"`
		PredTTFT  float64 `json:"predicted_ttft_ms"`
		PredTPOT  float64 `json:"predicted_tpot_ms"`
	}
	if json.Unmarshal(line, &l) == nil && l.RequestID != "" {
		a.lines[l.RequestID] = accessLine{ttftMs: l.TTFTMs, tpotMs: l.TPOTMs, heldMs: max(l.TotalMs-l.E2EMs, 0), endpoint: l.Endpoint,
			predTTFTMs: l.PredTTFT, predTPOTMs: l.PredTPOT}
	}
}

// lookup returns the access line of the request with that ID.
func (a *accessLog) lookup(id string) (accessLine, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l, ok := a.lines[id]
	return l, ok
}

// AddedTTFT is the TTFT the router added to streamed requests: the client's TTFT minus the
// TTFT the router measured from its upstream, request by request (joined on x-request-id).
type AddedTTFT struct {
	// Requests is how many requests had both figures; Ms the percentiles of the difference.
	Requests int                `json:"requests"`
	Ms       stats.Percentiles3 `json:"ms"`
	// Held is the part of it spent in the router between receipt and dispatch (reading the
	// body, waiting for a decision round, the pipeline's decision), over the same requests; the
	// rest is the client's and the upstream's transport and the relay of the first token.
	Held stats.Percentiles3 `json:"held_ms"`
	// ByPrompt splits it by prompt length (the usage block's prompt tokens).
	ByPrompt []AddedTTFTBucket `json:"by_prompt"`
}

// AddedTTFTBucket is AddedTTFT over prompts of at least MinTokens and fewer than the next
// bucket's.
type AddedTTFTBucket struct {
	MinTokens int                `json:"min_tokens"`
	Requests  int                `json:"requests"`
	Ms        stats.Percentiles3 `json:"ms"`
}

// addedTTFTBuckets are the prompt lengths AddedTTFT.ByPrompt starts its buckets at.
var addedTTFTBuckets = []int{0, 2_000, 10_000, 50_000}

// added returns the added TTFT of the results the access log has, nil when it has none (the
// router logged above info, or no request streamed content).
func (a *accessLog) added(results []loadgen.Result) *AddedTTFT {
	a.mu.Lock()
	defer a.mu.Unlock()
	all, held := []float64{}, []float64{}
	by := make([][]float64, len(addedTTFTBuckets))
	for _, r := range results {
		l, ok := a.lines[r.RequestID]
		if r.Kind != loadgen.OK || !r.Streamed || r.TTFT <= 0 || !ok || l.ttftMs <= 0 {
			continue
		}
		d := float64(r.TTFT)/float64(time.Millisecond) - l.ttftMs
		all, held = append(all, d), append(held, l.heldMs)
		i := len(addedTTFTBuckets) - 1
		for r.PromptTokens < addedTTFTBuckets[i] {
			i--
		}
		by[i] = append(by[i], d)
	}
	if len(all) == 0 {
		return nil
	}
	slices.Sort(all)
	slices.Sort(held)
	out := &AddedTTFT{Requests: len(all), Ms: stats.Of3(all), Held: stats.Of3(held)}
	for i, v := range by {
		slices.Sort(v)
		out.ByPrompt = append(out.ByPrompt, AddedTTFTBucket{MinTokens: addedTTFTBuckets[i], Requests: len(v), Ms: stats.Of3(v)})
	}
	return out
}
