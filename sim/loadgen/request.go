package loadgen

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/foresight-router/foresight/sim/workload"
)

// The request headers sent (the router's names, host/proxy/headers.go).
const (
	headerSLOTTFT   = "x-llm-d-slo-ttft-ms"
	headerSLOTPOT   = "x-llm-d-slo-tpot-ms"
	headerObjective = "x-llm-d-inference-objective"
	headerSession   = "x-session-id"
	headerFairness  = "x-gateway-inference-fairness-id"
	headerRequestID = "x-request-id"
)

// maxErrorBody is how much of an error response is read for its message.
const maxErrorBody = 4 << 10

// completionRequest is the /v1/completions body. The prompt goes to the engine as it is (a chat
// request would be wrapped in the emulator's and the router's own role markup), so the engine
// counts exactly the workload's tokens and the router hashes exactly the text the engine caches.
type completionRequest struct {
	Model         string         `json:"model"`
	Prompt        string         `json:"prompt"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chunk is what is read of a completion, streamed or whole.
type chunk struct {
	// Error is set on an error event an engine or router sends in place of a chunk.
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Choices []struct {
		Text string `json:"text"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// errorBody is OpenAI's error shape.
type errorBody struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Objective names the objective a request of priority is sent with: ObjectiveInteractive for
// priority >= 0, ObjectiveBatch below.
func Objective(priority int32) string {
	if priority < 0 {
		return ObjectiveBatch
	}
	return ObjectiveInteractive
}

// objective is the objective r is sent with: its class with Options.ClassObjectives, else
// Objective(priority).
func (g *Generator) objective(r *workload.Request) string {
	if g.opts.ClassObjectives && r.Class != "" {
		return r.Class
	}
	return Objective(r.Priority)
}

// newRequest builds the HTTP request of r to target.
func (g *Generator) newRequest(ctx context.Context, r *workload.Request, target int) (*http.Request, error) {
	if target < 0 || target >= len(g.endpoints) {
		return nil, fmt.Errorf("the chooser picked target %d of %d", target, len(g.endpoints))
	}
	body := completionRequest{Model: g.opts.Model, Prompt: Prompt(r), MaxTokens: max(r.OutputTokens, 1), Stream: r.Streaming}
	if r.Streaming {
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.endpoints[target], bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	if r.SLO.TTFTMs > 0 {
		h.Set(headerSLOTTFT, strconv.FormatFloat(r.SLO.TTFTMs, 'f', -1, 64))
	}
	if r.SLO.TPOTMs > 0 {
		h.Set(headerSLOTPOT, strconv.FormatFloat(r.SLO.TPOTMs, 'f', -1, 64))
	}
	if !g.opts.OmitObjective {
		h.Set(headerObjective, g.objective(r))
	}
	if r.Class != "" {
		h.Set(headerFairness, r.Class)
	}
	if r.SessionID != "" {
		h.Set(headerSession, r.SessionID)
	}
	return req, nil
}

// do sends r to target and measures its answer. It never fails: every problem is a Result kind.
func (g *Generator) do(ctx context.Context, start time.Time, r *workload.Request, target int) Result {
	res := Result{ID: r.ID, Target: target, Objective: g.objective(r), SLO: r.SLO, Streamed: r.Streaming}
	req, err := g.newRequest(ctx, r, target)
	if err != nil {
		res.Kind, res.Err = ClientError, err.Error()
		return res
	}
	sent := time.Now()
	res.Sent = sent.Sub(start)
	resp, err := g.client.Do(req)
	if err != nil {
		res.Kind, res.Err = ConnError, err.Error()
		if ctx.Err() != nil {
			res.Kind = Cut
		}
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.RequestID = resp.Header.Get(headerRequestID)
	if resp.StatusCode != http.StatusOK {
		res.Kind, res.Err = statusKind(resp.StatusCode), errorMessage(resp)
		return res
	}
	if r.Streaming {
		err = ReadStream(resp.Body, sent, &res)
	} else {
		err = readWhole(resp.Body, sent, &res)
	}
	switch {
	case err == nil:
		res.Kind = OK
	case ctx.Err() != nil:
		res.Kind, res.Err = Cut, ctx.Err().Error()
	default:
		res.Kind, res.Err = StreamError, err.Error()
	}
	return res
}

// statusKind classifies an HTTP error status.
func statusKind(code int) Kind {
	switch {
	case code == http.StatusTooManyRequests:
		return Shed
	case code >= 500:
		return ServerError
	default:
		return ClientError // 4xx, and any other status that is not 200
	}
}

// errorMessage reads an error response's message: its status and ErrorText.
func errorMessage(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return fmt.Sprintf("%d: %s", resp.StatusCode, ErrorText(b))
}

// ErrorText is the message of an error body: OpenAI's error.message, else the body itself.
func ErrorText(body []byte) string {
	var e errorBody
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(body))
}

// ReadStream reads an SSE completion stream up to its [DONE] into res: E2E, TTFT at the first
// chunk with text, TPOT from the last such chunk and the usage block's completion tokens, and the
// usage. A stream that ends without [DONE], breaks off or carries an error event is an error.
func ReadStream(body io.Reader, sent time.Time, res *Result) error {
	br := bufio.NewReaderSize(body, 16<<10)
	var first, last time.Time
	chunks := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // an event longer than the buffer: read it whole
			head := append([]byte(nil), line...) // ReadBytes reuses the buffer line points into
			rest, rerr := br.ReadBytes('\n')
			line, err = append(head, rest...), rerr
		}
		if err != nil {
			if err == io.EOF {
				return errors.New("stream ended before [DONE]")
			}
			return err
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue // blank separator lines, comments, event:/id: fields
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			break
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("reading a stream chunk: %w", err)
		}
		if c.Error != nil {
			return fmt.Errorf("error event in the stream: %s", c.Error.Message)
		}
		if len(c.Choices) > 0 && c.Choices[0].Text != "" {
			now := time.Now()
			if chunks == 0 {
				first = now
			}
			last = now
			chunks++
		}
		if c.Usage != nil {
			setUsage(res, &c)
		}
	}
	end := time.Now()
	res.E2E = end.Sub(sent)
	if chunks == 0 {
		return nil // an answer without text: no TTFT to report
	}
	res.TTFT = first.Sub(sent)
	n := res.CompletionTokens
	n = cmp.Or(n, chunks) // no usage block: one token per chunk, as vLLM streams
	if n > 1 {
		res.TPOT = last.Sub(first) / time.Duration(n-1)
	}
	return nil
}

// readWhole reads a completion that was not streamed: its first token reaches the client with
// the rest, so TTFT is the whole answer's time and there is no TPOT.
func readWhole(body io.Reader, sent time.Time, res *Result) error {
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	var c chunk
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	res.E2E = time.Since(sent)
	res.TTFT = res.E2E
	if c.Usage != nil {
		setUsage(res, &c)
	}
	return nil
}

func setUsage(res *Result, c *chunk) {
	res.PromptTokens, res.CompletionTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
	if d := c.Usage.PromptTokensDetails; d != nil {
		res.CachedTokens = d.CachedTokens
	}
}
