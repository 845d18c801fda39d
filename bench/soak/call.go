package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/foresight-router/foresight/bench/openloop"
	"github.com/foresight-router/foresight/internal/splitmix"
	"github.com/foresight-router/foresight/sim/emulator"
)

// call is one request of the soak, drawn from its number and the seed: a completion or a chat
// completion, streamed or whole (a stream asking for its usage or not), and how many tokens it
// asks for.
type call struct {
	n         int
	id        string // its x-request-id, which the router logs
	chat      bool
	stream    bool
	usage     bool // stream_options.include_usage; a whole answer always carries its usage
	maxTokens int
}

// newCall returns request n of the soak seeded with seed, asking for 1 to maxTokens tokens.
func newCall(seed uint64, n, maxTokens int) call {
	h := splitmix.Mix(splitmix.Mix(seed) + uint64(n)*splitmix.Gamma)
	return call{n: n, id: "soak-" + strconv.FormatUint(seed, 10) + "-" + strconv.Itoa(n),
		chat: h&1 != 0, stream: h&2 != 0, usage: h&2 != 0 && h&4 != 0, maxTokens: 1 + int((h>>8)%uint64(maxTokens))}
}

// path is the call's route.
func (c call) path() string {
	if c.chat {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// body is the call's JSON body.
func (c call) body() []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	body := struct {
		Model         string         `json:"model"`
		Prompt        string         `json:"prompt,omitempty"`
		Messages      []message      `json:"messages,omitempty"`
		MaxTokens     int            `json:"max_tokens"`
		Stream        bool           `json:"stream"`
		StreamOptions *streamOptions `json:"stream_options,omitempty"`
	}{Model: emulator.DefaultModel, MaxTokens: c.maxTokens, Stream: c.stream}
	prompt := "soak request " + strconv.Itoa(c.n)
	if c.chat {
		body.Messages = []message{{Role: "user", Content: prompt}}
	} else {
		body.Prompt = prompt
	}
	if c.usage {
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	b, _ := json.Marshal(body) // strings and numbers always encode
	return b
}

// idleConnTimeout is how long the load keeps an idle connection to the router: shorter than the
// router's server.idleTimeout, so that the client, as most do, closes the connections a burst
// opened and the router's goroutines for them end.
const idleConnTimeout = 30 * time.Second

// outcome is how one request ended.
type outcome struct {
	call
	at     time.Duration // when it was due, from the start of the load
	status int           // 0: no answer
	ttft   time.Duration // a stream's time to its first token
	e2e    time.Duration // to the answer's end
	// problem is "" for a complete, correct answer or a cut stream, else what was wrong or why
	// none came.
	problem string
	// cut is the error event's code of a stream the router ended with an error event (see
	// streamEnd); silent a stream that ended without data: [DONE] and without an error event.
	cut    string
	silent bool
	// dropped is the reason of a request the router answered itself under flow control (a 429
	// or 503 with x-foresight-dropped-reason and an OpenAI error body): answered, not wrong.
	dropped string
	skipped bool // not sent (the in-flight bound, or the bench stopped)
}

// load sends the soak's requests and keeps their outcomes.
type load struct {
	base      string
	client    *http.Client
	seed      uint64
	maxTokens int
	arrivals  []time.Duration

	mu       sync.Mutex
	outcomes []outcome
}

// newLoad returns the load of the router at base (http://host:port) over arrivals.
func newLoad(base string, seed uint64, maxTokens int, arrivals []time.Duration) *load {
	return &load{base: base, seed: seed, maxTokens: maxTokens, arrivals: arrivals, outcomes: make([]outcome, 0, len(arrivals)),
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: idleConnTimeout}}}
}

// send sends request n and checks its answer (openloop.Run's send).
func (l *load) send(ctx context.Context, n int) {
	o := l.do(ctx, newCall(l.seed, n, l.maxTokens))
	o.at = l.arrivals[n]
	l.record(o)
}

// skip records request n as not sent (openloop.Run's skip).
func (l *load) skip(n int, reason string) {
	l.record(outcome{call: newCall(l.seed, n, l.maxTokens), at: l.arrivals[n], problem: reason, skipped: true})
}

func (l *load) record(o outcome) {
	l.mu.Lock()
	l.outcomes = append(l.outcomes, o)
	l.mu.Unlock()
}

// droppedReason is the reason of an answer flow control gave (docs/configuration.md, "Flow
// control"): a 429 or a 503 whose x-foresight-dropped-reason names it and whose body is an
// OpenAI error with a message; "" for any other answer.
func droppedReason(resp *http.Response, body []byte) string {
	reason := resp.Header.Get("x-foresight-dropped-reason")
	if reason == "" || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return ""
	}
	if errorMessage(body) == "" || resp.Header.Get("x-llm-d-request-dropped-reason") != reason {
		return ""
	}
	return reason
}

// errorMessage is the message of an OpenAI error body, "" when body is none.
func errorMessage(body []byte) string {
	var a answer
	if json.Unmarshal(body, &a) != nil || a.Error == nil {
		return ""
	}
	return a.Error.Message
}

// newRequest is c's request to the router at base (http://host:port).
func newRequest(ctx context.Context, base string, c call) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+c.path(), bytes.NewReader(c.body()))
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-request-id", c.id)
	req.Header.Set("x-llm-d-slo-ttft-ms", strconv.Itoa(sloTTFTMs))
	return req, nil
}

// do sends c and reads its answer to the end.
func (l *load) do(ctx context.Context, c call) outcome {
	o := outcome{call: c}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := newRequest(ctx, l.base, c)
	if err != nil {
		o.problem = err.Error()
		return o
	}
	began := time.Now()
	resp, err := l.client.Do(req)
	if err != nil {
		o.problem = "transport: " + openloop.TransportError(err)
		return o
	}
	defer resp.Body.Close()
	o.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if reason := droppedReason(resp, snippet); reason != "" {
			o.dropped = reason
			return o
		}
		o.problem = fmt.Sprintf("status %d: %s", resp.StatusCode, openloop.ErrorMessage(snippet))
		return o
	}
	if c.stream {
		e := checkStream(resp.Body, c, began)
		o.ttft, o.problem, o.cut, o.silent = e.ttft, e.problem, e.cut, e.silent
	} else {
		o.problem = checkWhole(resp.Body, c)
	}
	o.e2e = time.Since(began)
	return o
}
