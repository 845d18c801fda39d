package tokenize

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Remote asks an engine for a prompt's token ids through vLLM's POST /tokenize, which applies
// the served model's own tokenizer and chat template: the tokens the engine computes, whatever
// the model.
type Remote struct {
	// Client makes the requests; Timeout bounds each (0: the caller's context alone).
	Client  *http.Client
	Timeout time.Duration
}

// maxTokenizeBytes bounds a /tokenize answer: a 128k-token prompt's ids are under 1 MB of JSON.
const maxTokenizeBytes = 16 << 20

// Tokens posts body (openai.Request.TokenizeBody) to baseURL + "/tokenize" and returns the
// answer's "tokens". Anything but a 200 with a JSON object holding them is an error.
func (r *Remote) Tokens(ctx context.Context, baseURL string, body []byte) ([]uint32, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	// /tokenize changes nothing: marked idempotent (the key present, empty, so not sent), it is
	// retried on a kept-alive connection the engine closed meanwhile (a restart), as a GET is.
	req.Header["Idempotency-Key"] = nil
	resp, err := r.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s/tokenize: reading the answer: %w", baseURL, err)
	case len(data) > maxTokenizeBytes:
		return nil, fmt.Errorf("%s/tokenize: answer over %d bytes", baseURL, maxTokenizeBytes)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s/tokenize: status %d: %.200s", baseURL, resp.StatusCode, data)
	}
	var out struct {
		Tokens *[]uint32 `json:"tokens"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s/tokenize: %w", baseURL, err)
	}
	if out.Tokens == nil {
		return nil, fmt.Errorf("%s/tokenize: the answer has no \"tokens\"", baseURL)
	}
	return *out.Tokens, nil
}
