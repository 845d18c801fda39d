package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Usage is the usage block of a response.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64 // prompt_tokens_details.cached_tokens; 0 when absent
}

// MaxAnswerBytes caps the answer text kept from a response (it feeds the prefix index, where a
// longer answer would only be hashed and aged out).
const MaxAnswerBytes = 1 << 20

// usageJSON is the usage object as engines send it.
type usageJSON struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// decodeUsage returns the usage in raw, or nil when it is absent, null or not a usage object.
func decodeUsage(raw json.RawMessage) *Usage {
	if isNull(raw) {
		return nil
	}
	var u usageJSON
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	out := &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// wholeResponse is the part of a non-streamed completion, chat completion or embeddings answer
// ReadWhole reads (an embeddings answer has no choices, only usage).
type wholeResponse struct {
	Choices []struct {
		Index   int     `json:"index"`
		Text    *string `json:"text"`
		Message *struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// ReadWhole extracts usage and the answer text from a non-streamed response body (the caller
// reads it, at most its limit, and forwards the bytes unchanged). The answer is choice 0's "text"
// for completions and "message.content" for chat, the "output_text" parts of the output's message
// items concatenated for responses, and "" for embeddings (whose usage has prompt tokens only),
// capped at MaxAnswerBytes; usage is nil when the body has none (an error body, say). Only a body
// that is not a JSON object is an error.
func ReadWhole(kind Kind, body []byte) (answer string, usage *Usage, err error) {
	if kind == Responses {
		b, usage, err := readWholeResponses(body)
		if err != nil {
			return "", nil, fmt.Errorf("decoding %s response: %w", kind, err)
		}
		return b.String(), usage, nil
	}
	var resp wholeResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return "", nil, fmt.Errorf("decoding %s response: %w", kind, err)
	}
	for _, c := range resp.Choices {
		if c.Index != 0 {
			continue
		}
		switch {
		case kind == Chat && c.Message != nil && c.Message.Content != nil:
			answer = *c.Message.Content
		case kind == Completions && c.Text != nil:
			answer = *c.Text
		}
		break
	}
	var b strings.Builder
	appendCapped(&b, answer)
	return b.String(), decodeUsage(resp.Usage), nil
}

// appendCapped appends s to b up to MaxAnswerBytes in all, cutting at a rune boundary.
func appendCapped(b *strings.Builder, s string) {
	room := MaxAnswerBytes - b.Len()
	if room <= 0 {
		return
	}
	if len(s) > room {
		// Back up to the start of the rune that would be split (at most UTFMax−1 bytes).
		for cut := room; cut > room-utf8.UTFMax && cut >= 0; cut-- {
			if utf8.RuneStart(s[cut]) {
				room = cut
				break
			}
		}
		s = s[:room]
	}
	b.WriteString(s)
}
