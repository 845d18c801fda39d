package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// responsesRequest is the part of a /v1/responses body the emulator reads.
type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Stream          bool            `json:"stream"`
}

// responsesPrompt renders a Responses request's instructions and input into one prompt: the
// instructions as a system message, then each input item as a message (see parseResponsesInput),
// in renderChat's format.
func responsesPrompt(req responsesRequest) (string, error) {
	msgs, err := parseResponsesInput(req.Input)
	if err != nil {
		return "", err
	}
	if req.Instructions != nil {
		msgs = append([]chatMessage{{Role: "system", Content: *req.Instructions}}, msgs...)
	}
	return renderChat(msgs), nil
}

// parseResponsesInput returns the messages of a Responses input: a string is one user message;
// an array holds items, where a message item ({"type":"message"} or no type, a role, a content
// string or array of parts) is a message whose content is its parts' text, and any other item
// (function_call, function_call_output, reasoning, …) is a message whose role is the item's type
// and whose content is the item's compact JSON, so that its size still counts in the prompt.
func parseResponsesInput(raw json.RawMessage) ([]chatMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("input is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []chatMessage{{Role: "user", Content: text}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("input must be a string or an array of input items")
	}
	if len(items) == 0 {
		return nil, errors.New("input must not be an empty array")
	}
	msgs := make([]chatMessage, len(items))
	for i, it := range items {
		var item struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(it, &item); err != nil || it[0] != '{' {
			return nil, fmt.Errorf("input[%d] must be an object (an input item)", i)
		}
		if item.Type != "" && item.Type != "message" {
			msgs[i] = chatMessage{Role: item.Type, Content: compactJSON(it)}
			continue
		}
		if item.Role == "" {
			return nil, fmt.Errorf("input[%d] is a message without a role (user, assistant, system or developer)", i)
		}
		content, err := responsesContent(item.Content, fmt.Sprintf("input[%d].content", i))
		if err != nil {
			return nil, err
		}
		msgs[i] = chatMessage{Role: item.Role, Content: content}
	}
	return msgs, nil
}

// responsesContent returns a message item's text: a string, or the concatenation of its parts,
// where an input_text or output_text part gives its text and any other part its compact JSON.
// Errors name the content as where.
func responsesContent(raw json.RawMessage, where string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", fmt.Errorf("%s is required", where)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("%s must be a string or an array of content parts", where)
	}
	var b strings.Builder
	for j, p := range parts {
		var part struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(p, &part); err != nil || p[0] != '{' {
			return "", fmt.Errorf("%s[%d] must be an object (a content part)", where, j)
		}
		if part.Type == "input_text" || part.Type == "output_text" {
			b.WriteString(part.Text)
		} else {
			b.WriteString(compactJSON(p))
		}
	}
	return b.String(), nil
}

// compactJSON returns valid JSON without insignificant whitespace.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// responseObject is a Responses API response, whole or as streamed events carry it.
type responseObject struct {
	ID        string          `json:"id"`
	Object    string          `json:"object"`
	CreatedAt int64           `json:"created_at"`
	Model     string          `json:"model"`
	Status    string          `json:"status"`
	Output    []outputMessage `json:"output"`
	Usage     *responseUsage  `json:"usage"`
}

// outputMessage is the assistant message item of a response's output.
type outputMessage struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Role    string       `json:"role"`
	Status  string       `json:"status"`
	Content []outputText `json:"content"`
}

// outputText is an output_text content part.
type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

func newOutputText(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}}
}

// responseUsage is the Responses API's usage object.
type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	TotalTokens        int `json:"total_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (g generation) responseUsage() *responseUsage {
	u := &responseUsage{InputTokens: g.promptTokens, OutputTokens: g.completionTokens, TotalTokens: g.promptTokens + g.completionTokens}
	u.InputTokensDetails.CachedTokens = g.cachedTokens
	return u
}
