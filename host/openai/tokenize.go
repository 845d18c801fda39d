package openai

import (
	"encoding/json"
	"fmt"
)

// TokenizeBody returns the body of vLLM's POST /tokenize for the request's prompt, which asks
// the engine for the token ids it would compute: {"model", "prompt"} for completions, {"model",
// "messages"} for chat (rendered with the model's chat template and its generation prompt,
// /tokenize's defaults). ok is false for the APIs /tokenize does not take (responses, embeddings).
func (r *Request) TokenizeBody() (body []byte, ok bool, err error) {
	model, err := json.Marshal(r.Model)
	if err != nil {
		return nil, false, fmt.Errorf("encoding the tokenize body: %w", err)
	}
	fields := map[string]json.RawMessage{"model": model}
	switch r.Kind {
	case Completions: // the prompt as a string: a client's array of one string is the same prompt
		if fields["prompt"], err = json.Marshal(r.Prompt); err != nil {
			return nil, false, fmt.Errorf("encoding the tokenize body: %w", err)
		}
	case Chat:
		fields["messages"] = r.raw["messages"]
	default:
		return nil, false, nil
	}
	b, err := encode(fields)
	if err != nil {
		return nil, false, fmt.Errorf("encoding the tokenize body: %w", err)
	}
	return b, true, nil
}
