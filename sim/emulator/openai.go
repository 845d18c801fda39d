package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// defaultMaxTokens is the output length when a request gives none (OpenAI's legacy completions
// default).
const defaultMaxTokens = 16

// streamOptions is OpenAI's stream_options.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// completionRequest is the part of a /v1/completions body the emulator reads.
type completionRequest struct {
	Model            string          `json:"model"`
	Prompt           json.RawMessage `json:"prompt"`
	MaxTokens        *int            `json:"max_tokens"`
	Stream           bool            `json:"stream"`
	StreamOptions    *streamOptions  `json:"stream_options"`
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`
}

// chatMessage is one chat message; Content is the text (parts of type "text" are joined).
type chatMessage struct {
	Role    string
	Content string
}

// UnmarshalJSON accepts content as a string or as an array of {"type":"text","text":...} parts.
func (m *chatMessage) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw.Content, &m.Content); err == nil {
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw.Content, &parts); err != nil {
		return errors.New("message content must be a string or an array of text parts")
	}
	var b2 strings.Builder
	for _, p := range parts {
		b2.WriteString(p.Text)
	}
	m.Content = b2.String()
	return nil
}

// chatRequest is the part of a /v1/chat/completions body the emulator reads.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	KVTransferParams    json.RawMessage `json:"kv_transfer_params"`
}

// parsePrompt returns the prompt text: a string, or an array holding one string.
func parsePrompt(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("prompt is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err == nil && len(ss) == 1 {
		return ss[0], nil
	}
	return "", errors.New("prompt must be a string (or an array of one string)")
}

// outputLength validates the requested output length; the first non-nil of ns wins.
func outputLength(names []string, ns ...*int) (int, error) {
	for i, n := range ns {
		if n == nil {
			continue
		}
		if *n < 1 {
			return 0, fmt.Errorf("%s must be at least 1, got %d", names[i], *n)
		}
		return *n, nil
	}
	return defaultMaxTokens, nil
}

// usage is OpenAI's usage object with vLLM's cached-token detail.
type usage struct {
	PromptTokens        int                 `json:"prompt_tokens"`
	CompletionTokens    int                 `json:"completion_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	PromptTokensDetails promptTokensDetails `json:"prompt_tokens_details"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (g generation) usage() *usage {
	return &usage{
		PromptTokens:        g.promptTokens,
		CompletionTokens:    g.completionTokens,
		TotalTokens:         g.promptTokens + g.completionTokens,
		PromptTokensDetails: promptTokensDetails{CachedTokens: g.cachedTokens},
	}
}

// completionChoice is a /v1/completions choice, streamed or not.
type completionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

// chatDelta is a streamed chat choice's delta.
type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// chatChoice is a /v1/chat/completions choice: Message when complete, Delta when streamed.
type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessageOut `json:"message,omitempty"`
	Delta        *chatDelta      `json:"delta,omitempty"`
	FinishReason *string         `json:"finish_reason"`
}

type chatMessageOut struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// response is a completion, chat completion or one of their stream chunks. KVTransferParams is
// set in a prefill half's answer only.
type response struct {
	ID               string         `json:"id"`
	Object           string         `json:"object"`
	Created          int64          `json:"created"`
	Model            string         `json:"model"`
	Choices          any            `json:"choices"`
	Usage            *usage         `json:"usage,omitempty"`
	KVTransferParams *kvTransferOut `json:"kv_transfer_params,omitempty"`
}

// errorBody is OpenAI's error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param,omitempty"` // the request field at fault, when one is
	Code    int    `json:"code"`
}
